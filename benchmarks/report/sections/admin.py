"""The admin's section of docs/benchmarks.md, from ``python -m benchmarks admin_render``'s JSON.

The admin pages are timed by their own command (it fills a database of a million jobs, which
the interleaved scenarios do not need), so this section reports its last run as it was taken.
"""

from __future__ import annotations

from typing import Any

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section

PAGES_WITH_A_TARGET = ("dashboard", "job list")


def slowest_target_page(result: dict[str, Any]) -> float | None:
    """The larger median of the dashboard and the job list, in ms (the issue's target pages)."""
    medians = [
        r["median_ms"] for r in result.get("results", []) if r["page"] in PAGES_WITH_A_TARGET
    ]
    return max(medians) if medians else None


def _render(result: dict[str, Any]) -> str:

    machine, server = result.get("machine", {}), result.get("server", {})
    size = server.get("jobs_table_mib", {})
    pool = int(server.get("innodb_buffer_pool_size") or 0) / 2**20
    rows = [
        [
            r["page"],
            f"{r['median_ms']:,.1f}",
            f"{r['p95_ms']:,.1f}",
            f"{r['max_ms']:,.1f}",
            str(r["queries"]),
            f"{r['sql_ms']:,.1f}",
        ]
        for r in result.get("results", [])
    ]
    intro = (
        "## The admin with a million jobs: dashboard and job list render times\n\n"
        f"`python -m benchmarks admin_render` fills its own database with {result['rows']:,}"
        " jobs (mostly finished history, some failed with tracebacks, a few ready and"
        " scheduled), then renders each page with Django's test client as a logged-in"
        f" superuser: 2 warm-up requests, then {result['repeat']} timed ones (`DEBUG=False`)."
        " It runs on its own, not interleaved with the scenarios above, and the figures are"
        " those of its last run.\n\n"
        f"*Run {result.get('measured_at', '?')}, on {machine.get('cpu', '?')}"
        f" ({machine.get('cores', '?')} cores) with Python {machine.get('python', '?')};"
        f" {server.get('version', '?')}, buffer pool {pool:.0f} MiB, jobs table"
        f" {size.get('data', '?')} MiB of data and {size.get('indexes', '?')} MiB of indexes;"
        f" load average at its end {result.get('load_average')}.*"
    )
    header = ["Page", "median ms", "p95 ms", "max ms", "queries", "SQL ms"]
    return intro + "\n\n" + table(header, rows)


@section(200, "admin_render", full_only=True)
def admin(inputs: Inputs) -> str:
    return _render(inputs.results["admin_render"])
