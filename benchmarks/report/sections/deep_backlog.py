"""The deep backlog's section (``python -m benchmarks deep_backlog``, raw/deep_backlog.json)."""

from __future__ import annotations

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section


@section(250, "deep_backlog", full_only=True)
def deep_backlog(inputs: Inputs) -> str:
    return _render(inputs.results["deep_backlog"])


def _render(result: dict) -> str:
    """The section of docs/benchmarks.md for the last run (raw/deep_backlog.json)."""
    settings, m = result["settings"], result["machine"]
    rows = []
    for shape, by_size in result["medians"].items():
        deep, shallow = by_size["deep"], by_size["shallow"]
        pairs = zip(result["runs"][shape]["deep"], result["runs"][shape]["shallow"], strict=True)
        per_round = ", ".join(f"{d['jobs_per_s'] / s['jobs_per_s']:.2f}×" for d, s in pairs)
        rows.append(
            [
                shape,
                f"{shallow['jobs_per_s']:,.0f}",
                f"{deep['jobs_per_s']:,.0f}",
                f"{deep['jobs_per_s'] / shallow['jobs_per_s']:.2f}× ({per_round})",
                f"{shallow['cpu_ms_per_job']:.3f} / {deep['cpu_ms_per_job']:.3f}",
                f"{shallow['server_cpu_ms_per_job']:.3f} / {deep['server_cpu_ms_per_job']:.3f}",
            ]
        )
    header = [
        "P × T",
        f"{int(settings['shallow']):,} waiting, jobs/s",
        f"{int(settings['deep']):,} waiting, jobs/s",
        "deep ÷ shallow (by round)",
        "worker CPU ms/job shallow / deep",
        "server CPU ms/job shallow / deep",
    ]
    load = ", ".join(f"{x:.1f}" for x in result["started"]["loadavg"])
    load_end = ", ".join(f"{x:.1f}" for x in result["ended"]["loadavg"])
    return f"""
## Drain from a deep backlog (issue 23)

`python -m benchmarks deep_backlog --rounds {settings["rounds"]}`: the table holds
{int(settings["deep"]):,} or {int(settings["shallow"]):,} ready no-op jobs (copies of one row
`enqueue_many` wrote, inserted in one `INSERT ... SELECT`), and `runworkers` with its defaults
(claiming ahead on) runs {int(settings["jobs"]):,} of them, timed from the first finished job.
Both backlogs in each shape every round, the deep one first in odd rounds; medians of
{settings["rounds"]} rounds. Progress is counted as succeeded rows, which the claim index
finds without reading the waiting ones. Target: deep ÷ shallow ≥ 0.9.

{table(header, rows)}

Measured {result["started"]["at"]} to {result["ended"]["at"]} on {m["cpu"]}, {m["cores"]}
cores, {m["ram_gib"]} GiB, Python {m["python"]}, the shared MariaDB on 127.0.0.1 with a
{result.get("buffer_pool_mib", "?")} MiB buffer pool (a million jobs do not fit in it: the drain
reads the rows at the queue's head from disk as it goes). Before each drain the server writes
back the fill's dirty pages. Load average at the start {load}, at the end {load_end}. Raw runs:
`docs/benchmarks/raw/deep_backlog.json`.

{result.get("notes", "")}
"""
