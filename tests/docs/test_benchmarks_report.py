"""docs/benchmarks.md is generated whole, and the benchmarks package has no import cycle.

The page must be what ``python -m benchmarks report`` writes from the stored results: a
paragraph edited on the page by hand, or a section that no longer registers, fails here.
The import graph (imports inside functions included) must be acyclic and one-way: scenarios
never import the report, the report's sections never import each other's renderers through
the page.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks import report
from benchmarks.report import plots
from benchmarks.report.registry import Inputs, registered
from benchmarks.scenarios import SCENARIOS
from tests.conftest import ROOT

pytestmark = pytest.mark.vendor_neutral

PACKAGE = ROOT / "benchmarks"


def test_the_page_is_what_the_report_writes_from_the_stored_results():
    results = report.load(quick=False)
    page = report.render(Inputs(results, plots.links(results, quick=False), quick=False))
    assert page == (ROOT / "docs" / "benchmarks.md").read_text()


def test_every_section_is_registered_once_at_its_own_place():
    sections = registered()
    orders = [s.order for s in sections]
    assert len(set(orders)) == len(orders)
    names = {s.name for s in sections}
    assert {"written.intro", "scenarios.drain", "ab.ab", "written.analysis"} <= names


def test_every_scenario_of_the_suite_has_a_section_that_reads_its_results():
    read = {name for s in registered() for name in s.raw}
    assert set(SCENARIOS) <= read


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The package modules ``path`` imports, at the top or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            # ``from package import module`` depends on the module, not on the package's
            # ``__init__``; ``from module import name`` on the module.
            submodules = [f"{node.module}.{a.name}" for a in node.names]
            names = [n for n in submodules if n in known] or [node.module]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def _graph() -> dict[str, set[str]]:
    files = [p for p in PACKAGE.rglob("*.py") if ".venv" not in p.parts and ".work" not in p.parts]
    known = {_module(p) for p in files}
    return {_module(p): _imports(p, known) - {_module(p)} for p in files}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_benchmarks_package_imports_no_module_in_a_circle():
    graph = _graph()
    assert len(graph) > 40
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_a_circle_is_found_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_scenario_imports_the_report():
    graph = _graph()
    offending = {
        module: sorted(t for t in targets if t.startswith("benchmarks.report"))
        for module, targets in graph.items()
        if module.startswith("benchmarks.scenarios")
    }
    assert {m: t for m, t in offending.items() if t} == {}
