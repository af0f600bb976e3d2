"""Sections written by hand whole, in benchmarks/report/text/: the frame and past A/B runs.

The A/B sections describe runs whose commands printed their figures (``hotpath_ab``,
``enqueue_ab``); their raw runs are in docs/benchmarks/raw/ and the text cites them.
"""

from __future__ import annotations

from benchmarks.report.prose import fragment
from benchmarks.report.registry import Inputs, section


@section(10)
def intro(inputs: Inputs) -> str:
    return fragment("intro")


@section(20)
def method(inputs: Inputs) -> str:
    return fragment("method")


@section(260, full_only=True)
def hotpath_ab(inputs: Inputs) -> str:
    """The per-job path before and after (issue 23), and the job threads."""
    return fragment("hotpath_ab")


@section(270, full_only=True)
def enqueue_ab(inputs: Inputs) -> str:
    """Single enqueue before and after, against Celery's ``.delay()`` (issue 23)."""
    return fragment("enqueue_ab")


@section(280, full_only=True)
def bulk_enqueue_ab(inputs: Inputs) -> str:
    """Bulk enqueue before and after (issue 23)."""
    return fragment("bulk_enqueue_ab")


@section(900)
def analysis(inputs: Inputs) -> str:
    return fragment("analysis")
