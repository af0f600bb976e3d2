"""Markdown pieces every section builds with: tables, 'median [min–max]' cells, ratios, images."""

from __future__ import annotations


def cell(figure: dict | None, digits: int = 0) -> str:
    """'median [min–max]' of a summary, or '–' when there is no value."""
    if not figure or figure.get("median") is None:
        return "–"
    f = f"{{:,.{digits}f}}"
    return f"{f.format(figure['median'])} [{f.format(figure['min'])}–{f.format(figure['max'])}]"


def times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def image(path: str | None, alt: str) -> str:
    return f"![{alt}]({path})" if path else ""
