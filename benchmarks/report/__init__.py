"""docs/benchmarks.md, regenerated whole from the stored results: ``python -m benchmarks report``.

The page is the registered sections (:mod:`benchmarks.report.registry`) in order, each
rendered from the raw JSON in ``docs/benchmarks/raw/`` (a quick run's under
``benchmarks/.work/quick/``) and the hand-written text in ``benchmarks/report/text/``.
Nothing on the page is edited by hand: edit a section or its text and regenerate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.harness import output_dir, page
from benchmarks.report import plots
from benchmarks.report.registry import Inputs, raw_names, registered


def load(quick: bool) -> dict[str, Any]:
    """Every stored result a section reads (those that exist)."""
    results = {}
    for name in raw_names():
        path = output_dir(quick) / "raw" / f"{name}.json"
        if path.exists():
            results[name] = json.loads(path.read_text())
    return results


def render(inputs: Inputs) -> str:
    """The page's markdown: every shown section, in order."""
    parts = [s.render(inputs) for s in registered() if s.shown(inputs)]
    return "\n\n".join(part.strip() for part in parts if part and part.strip()) + "\n"


def write(quick: bool, results: dict[str, Any] | None = None) -> Path:
    """Draw the plots and write the page from ``results`` (default: the stored ones)."""
    results = load(quick) if results is None else results
    figures = plots.draw(results, quick)
    path = page(quick)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(Inputs(results, figures, quick)))
    return path
