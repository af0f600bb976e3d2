"""The speed targets (issues 5 and 6), checked against the results: reported, never asserted."""

from __future__ import annotations

from typing import Any

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section
from benchmarks.report.sections import admin as admin_section
from benchmarks.stats import ratio


def _median(results: dict, *path: str) -> float | None:
    node: Any = results
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node.get("median") if isinstance(node, dict) else node


def rows(results: dict) -> list[list[str]]:
    """(target, measured, verdict) for every target the results can answer."""
    found: list[list[str]] = []

    def check(target: str, value: float | None, goal: float, unit: str, higher: bool) -> None:
        if value is None:
            return
        met = value >= goal if higher else value <= goal
        gap = value / goal if goal else 0
        verdict = "met" if met else f"missed ({gap:.3f}× the target)"
        found.append([target, f"{value:,.3f}{unit}", verdict])

    drain = results.get("drain", {})
    for shape in ("4x1", "4x4"):
        ours = _median(drain, "table", shape, "ours", "jobs_per_s")
        for peer, goal in (("raw", 0.7), ("tasksdb", 25.0), ("celery", 8.0), ("ox", 1.5)):
            theirs = _median(drain, "table", shape, peer, "jobs_per_s")
            name = {
                "raw": "the raw SQL reference",
                "tasksdb": "django-tasks-db",
                "celery": "Celery + Redis",
                "ox": "django-ox",
            }[peer]
            check(
                f"Drain, 4 processes × {shape[2]} thread(s): ≥ {goal}× {name}",
                ratio(ours, theirs),
                goal,
                "×",
                True,
            )
    history = results.get("history", {})
    check(
        "Claim time with the largest history ≤ 1.1× the empty table",
        history.get("ratio_time"),
        1.1,
        "×",
        False,
    )
    check(
        "Bulk enqueue ≥ 20,000 jobs/s",
        _median(results, "enqueue", "table", "bulk", "ours"),
        20_000,
        " jobs/s",
        True,
    )
    check(
        "Idle worker < 1% of a core",
        _median(results, "idle", "table", "ours", "cpu_percent"),
        1.0,
        "%",
        False,
    )
    check(
        "Median commit-to-start latency on idle workers, with wake-up, < 10 ms",
        _median(results, "latency", "table", "idle", "ours", "p50_ms"),
        10.0,
        " ms",
        False,
    )
    check(
        "Admin with 1,000,000 jobs: dashboard and job list each render < 1 s (issue 5)",
        admin_section.slowest_target_page(results.get("admin_render", {})),
        1000.0,
        " ms",
        False,
    )
    check(
        "Drain with `runworkers --metrics-port` ≥ 0.95× the drain without (issue 21)",
        results.get("metrics", {}).get("ratio"),
        0.95,
        "×",
        True,
    )
    return found


def _render(results: dict) -> str:

    found = rows(results)
    if not found:
        return ""
    body = table(["Target", "Measured (median)", "Verdict"], found)
    return "## Targets\n\n" + body + "\n\nWhy a missed target is missed: see *Analysis* below."


@section(
    40,
)
def targets(inputs: Inputs) -> str:
    return _render(inputs.results)
