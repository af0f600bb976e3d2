"""The page's hand-written text: fragments in benchmarks/report/text/, scenario descriptions."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

TEXT = Path(__file__).resolve().parent / "text"


def fragment(name: str) -> str:
    """The text of ``text/NAME.md`` (markdown; the binlog one is a format string)."""
    return (TEXT / f"{name}.md").read_text()


def scenario_notes(name: str, result: dict) -> str:
    """The section heading and the scenario's own description (its module docstring)."""
    module = importlib.import_module(f"benchmarks.scenarios.{name}")
    doc = inspect.getdoc(module) or ""
    title, _, body = doc.partition("\n\n")
    heading = title.split(":", 1)
    number, text = heading[0], heading[1].strip() if len(heading) > 1 else ""
    seconds, when = result.get("elapsed_s"), result.get("conditions") or {}
    took = (
        f"\n\n*Run {when.get('started', '?')} UTC, {seconds / 60:.1f} minutes" if seconds else ""
    )
    if took and "cpu" in when:
        took += f", on {when['cpu']} with Python {when['python']}"
    if took and when:
        took += (
            f"; load average at its start {when['load_average']}, "
            f"{when['other_runs']} other test or worker processes.*"
        )
    elif took:
        took += ".*"
    return f"## {number}: {text}\n\n{' '.join(body.split())}{took}"
