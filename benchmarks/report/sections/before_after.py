"""The section of ``python -m benchmarks before_after`` (raw/before_after.json): issue 13's run."""

from __future__ import annotations

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section


@section(230, "before_after", full_only=True)
def before_after(inputs: Inputs) -> str:
    return _render(inputs.results["before_after"])


def _render(result: dict) -> str:
    """The section of docs/benchmarks.md for the last run (its JSON in raw/before_after.json)."""

    def figure(value: float | None, digits: int) -> str:
        return "–" if value is None else f"{value:,.{digits}f}"

    rows = []
    for config, row in result["medians"].items():
        rows.append(
            [
                config,
                figure(row["jobs_per_s before"], 0),
                figure(row["jobs_per_s after"], 0),
                figure(row["jobs_per_s after/before"], 2) + "×",
                figure(row["cpu_ms_per_job before"], 3),
                figure(row["cpu_ms_per_job after"], 3),
                figure(row["cpu_ms_per_job after/before"], 2) + "×",
            ]
        )
    header = [
        "run",
        "jobs/s before",
        "jobs/s after",
        "after ÷ before",
        "CPU ms/job before",
        "CPU ms/job after",
        "after ÷ before",
    ]
    settings = result["settings"]
    machine_ = result["machine"]
    start, end = result["started"], result["ended"]
    load = ", ".join(f"{x:.1f}" for x in start["loadavg"])
    load_end = ", ".join(f"{x:.1f}" for x in end["loadavg"])
    order = ", ".join("BA" if r % 2 else "AB" for r in range(settings["rounds"]))
    return f"""
## Before and after the layout by process role (issue 13)

`python -m benchmarks before_after --before {result["before"][:7]} --after
{result["after"][:7]} --rounds {settings["rounds"]}`: the commit before the layout moves
({result["before"][:10]}) and the code after them ({result["after"][:10]}), each checked out
in a git worktree of its own with a database of its own, run interleaved in one invocation
({order}): the 4 × 4 drain of scenario 1 ({settings["drain_jobs"]:,} jobs, measured over
at most {settings["drain_cap"]:g} s after the first finished job) and the batch sweep of
scenario 6 ({settings["sweep_jobs"]:,} jobs per run, B jobs per claim). Medians of
{settings["rounds"]} rounds; throughput above 1× is faster after, CPU (the worker processes'
or the sweep process's, per job) below 1× is cheaper after.

{table(header, rows)}

Measured {start["at"]} to {end["at"]} on {machine_["cpu"]}, {machine_["cores"]} cores,
{machine_["ram_gib"]} GiB, Python {machine_["python"]}, the shared MariaDB on 127.0.0.1. Load
average at the start {load}, at the end {load_end} (the raw runs are in
`docs/benchmarks/raw/before_after.json`); the rounds' interleaving makes a change of the load
hit both sides alike, not evenly within a round.

{result.get("notes", "")}
"""
