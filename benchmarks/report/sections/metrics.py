"""The metrics' section of docs/benchmarks.md, from ``python -m benchmarks metrics_cost``'s JSON.

What ``runworkers --metrics-port`` costs a drain is measured by its own command (on and off,
interleaved), so this section reports its last run as it was taken.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section

#: Issue 21: a drain with metrics on keeps at least this share of the throughput without.
TARGET = 0.95


def _figure(runs: list[float]) -> str:
    return f"{statistics.median(runs):,.0f} ({min(runs):,.0f}–{max(runs):,.0f})"


def _cpu(runs: list[float]) -> str:
    return f"{statistics.median(runs):.3f} ({min(runs):.3f}–{max(runs):.3f})"


def _earlier(result: dict[str, Any]) -> str:
    runs = result.get("earlier", [])
    if not runs:
        return ""
    told = "; ".join(
        f"{run['measured_at']} ({run['reps']} runs each way of {run.get('jobs', 4000):,} jobs, "
        f"load {run['load_average'][0]}{', ' + run['note'] if run.get('note') else ''}): "
        f"throughput {run['ratio']:.2f}×, CPU {run['cpu_ratio']:.2f}×"
        for run in runs
    )
    return f"Earlier runs of the same command: {told}."


def _render(result: dict[str, Any]) -> str:

    runs = result["jobs_per_s"]
    cpu = result["cpu_ms_per_job"]
    pairs = [on / off for on, off in zip(runs["on"], runs["off"], strict=True)]
    rows = [
        ["metrics off", _figure(runs["off"]), _cpu(cpu["off"])],
        ["`--metrics-port`, scraped every second", _figure(runs["on"]), _cpu(cpu["on"])],
    ]
    machine = result.get("machine", {})
    return f"""
## Prometheus metrics: a drain with `--metrics-port` against without

`python -m benchmarks metrics_cost`: {result["jobs"]:,} no-op jobs drained by `runworkers
--burst --processes {result["processes"]} --threads {result["threads"]}`, {result["reps"]} runs
each way, interleaved with the order alternating; with metrics on, a scraper reads the port
every second. Jobs per second from the first claim to the last completion (the jobs' own
timestamps), and the CPU the runworkers processes spent per job (getrusage, less that of a run
with nothing to do), median (min–max):

{table(["Run", "jobs/s", "worker CPU ms per job"], rows)}

Throughput on ÷ off: **{result["ratio"]:.2f}×** (medians; the pairs, in run order:
{", ".join(f"{p:.2f}" for p in pairs)}), against the target of at least 0.95× (issue 21):
{_verdict(result["ratio"], pairs)}
CPU per job off ÷ on, the throughput the CPU alone allows: **{result["cpu_ratio"]:.2f}×**.
On a machine shared with other runs, throughput swings with the load from one run to the next
far more than the metrics move it; the CPU per job is the steadier measure of their cost.
{_scrapes(result)}
{_earlier(result)}
Off, the worker's hooks are one `is None` test each; on, they add to dicts, and the loop writes
the memory maps before it starts the jobs it claimed and otherwise at most every 0.5 s (a
write of one turn's counts, about 23 µs on this machine, a micro-benchmark of 4 jobs a turn).
Writing them on every turn of the loop, as before, cost the 20,000-job drain about 5%
(0.90× and 1.01× in two runs); a drain of 4,000 jobs now lasts under a second, too short to
measure it (0.86×).

*Run {result.get("measured_at", "?")}, on {machine.get("cpu", "?")} ({machine.get("cores", "?")}
cores, {machine.get("ram_gib", "?")} GiB) with Python {machine.get("python", "?")}, Django
{machine.get("django", "?")}, {machine.get("database", "?")}; load average at its end
{result.get("load_average")}; other runs seen: {len(result.get("busy", []))}.*
"""


def _verdict(ratio: float, pairs: list[float]) -> str:
    """Met or missed by the medians, and how many run pairs fell below the target."""
    below = sum(pair < TARGET for pair in pairs)
    verdict = "**met**" if ratio >= TARGET else "**missed**"
    noise = " A ratio above 1 is the machine's noise: the metrics add work." if ratio > 1 else ""
    return f"{verdict} by the medians; {below} of {len(pairs)} pairs below {TARGET}×.{noise}"


def _scrapes(result: dict[str, Any]) -> str:
    scrapes = result.get("scrapes") or []
    if not scrapes:
        return ""
    told = f"{min(scrapes)}" if min(scrapes) == max(scrapes) else f"{min(scrapes)}–{max(scrapes)}"
    return (
        f"The scraper read the port {told} times per run with metrics on (a run lasts about as "
        "many seconds)."
    )


@section(220, "metrics", full_only=True)
def metrics(inputs: Inputs) -> str:
    return _render(inputs.results["metrics"])
