"""The layout's measures that docs/discussions/architecture.md reports, computed from the code.

Measures, not caps: a module that holds one idea may be long, and merging two ideas to meet a
count is worse than the count. The docs build renders them (``docs/_ext/measures.py``, the
``measures`` directive), so the page cannot go stale; ``python -m tests.support.measures``
prints them. The modules one job's first successful attempt runs are traced by
``tests/worker/test_hot_path_modules.py`` (it needs a database), which fails when the page's
list of them is stale.
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "django_skipqueue"
PAGE = ROOT / "docs" / "discussions" / "architecture.md"
HOT_PATH = re.compile(r"<!-- hot path: (?P<modules>[^>]*) -->")
#: Functions longer than this are listed: a long function often hides a named step.
LONG_FUNCTION = 40


def package_files() -> list[Path]:
    """The package's Python files, migrations left out (generated)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def top_level_modules() -> list[str]:
    return sorted(path.stem for path in PACKAGE.glob("*.py"))


def function_lengths() -> list[tuple[int, str]]:
    """(lines, ``module:function``) of every function and method, longest first."""
    found = []
    for path in package_files():
        module = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                found.append((node.end_lineno - node.lineno + 1, f"{module}:{node.name}"))
    return sorted(found, key=lambda item: (-item[0], item[1]))


def module_lengths() -> list[tuple[int, str]]:
    """(lines, module) of every module, longest first."""
    found = [
        (len(p.read_text().splitlines()), str(p.relative_to(PACKAGE))) for p in package_files()
    ]
    return sorted(found, key=lambda item: (-item[0], item[1]))


def rows() -> list[tuple[str, str]]:
    """The measures as (name, value), as the page shows them."""
    functions = function_lengths()
    lengths = sorted(length for length, _ in functions)
    p90 = statistics.quantiles(lengths, n=10)[-1]
    modules = module_lengths()
    sizes = [length for length, _ in modules]
    long = [f"{name} ({length})" for length, name in functions if length > LONG_FUNCTION]
    return [
        ("Modules at the top of django_skipqueue/", str(len(top_level_modules()))),
        ("Modules in the package (migrations aside)", str(len(modules))),
        ("Module length, median / largest (lines)", f"{statistics.median(sizes):g} / {sizes[0]}"),
        ("Largest modules (lines)", ", ".join(f"{name} ({n})" for n, name in modules[:5])),
        ("Functions and methods", str(len(functions))),
        (
            "Function length, median / p90 / max (lines)",
            f"{statistics.median(lengths):g} / {p90:g} / {lengths[-1]}",
        ),
        (f"Functions over {LONG_FUNCTION} lines", ", ".join(long) or "none"),
    ]


def hot_path_on_page(text: str) -> list[str]:
    """The hot path's modules as the page lists them (its hidden marker)."""
    match = HOT_PATH.search(text)
    assert match, "docs/discussions/architecture.md lost its hot-path marker"
    return match["modules"].split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    for name, value in rows():
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
