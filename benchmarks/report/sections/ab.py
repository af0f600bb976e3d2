"""The last ``python -m benchmarks ab`` run (raw/ab.json): two commits, each side's spread."""

from __future__ import annotations

from typing import Any

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section

#: How each figure reads on the page: label, digits.
FIGURES = {
    "jobs_per_s": ("jobs/s", 0),
    "cpu_ms_per_job": ("worker CPU ms/job", 3),
    "msgs_per_s": ("messages/s", 0),
    "cpu_us_per_msg": ("relay CPU µs/message", 0),
}
RUNS = {
    "drain quiet": "drain, quiet logging",
    "drain default": "drain, Django's default logging",
    "relay": "outbox relay",
    "flow": "flow drain",
}


def _spread(side: dict[str, Any], digits: int) -> str:
    """'median [min–max] (IQR q1–q3)' of one side."""
    if side.get("median") is None:
        return "–"
    f = f"{{:,.{digits}f}}"
    return (
        f"{f.format(side['median'])} [{f.format(side['min'])}–{f.format(side['max'])}]"
        f" (IQR {f.format(side['q1'])}–{f.format(side['q3'])})"
    )


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _rows(summary: dict[str, dict[str, dict]]) -> list[list[str]]:
    rows = []
    for config, by_figure in summary.items():
        for key, figure in by_figure.items():
            label, digits = FIGURES[key]
            rounds = figure["rounds"]
            spread = "–" if rounds.get("median") is None else (
                f"{_ratio(rounds['min'])}–{_ratio(rounds['max'])}"
            )  # fmt: skip
            rows.append(
                [
                    f"{RUNS.get(config, config)}: {label}",
                    _spread(figure["before"], digits),
                    _spread(figure["after"], digits),
                    _ratio(figure["after/before"]),
                    spread,
                ]
            )
    return rows


@section(300, "ab", full_only=True)
def ab(inputs: Inputs) -> str:
    result = inputs.results["ab"]
    s, m = result["settings"], result["machine"]
    start, end = result["started"], result["ended"]
    keys, limit = s["flow"].split(":")
    load = ", ".join(f"{x:.1f}" for x in start["loadavg"])
    load_end = ", ".join(f"{x:.1f}" for x in end["loadavg"])
    header = ["run: figure", "before", "after", "after ÷ before", "rounds' after ÷ before"]
    return f"""
## {result["title"]}

`python -m benchmarks ab --before {result["before"][:7]} --after {result["after"][:7]}
--rounds {s["rounds"]} --jobs {s["jobs"]} --shape {s["shape"]} --messages {s["messages"]}
--flow-jobs {s["flow_jobs"]} --flow {s["flow"]}`: the commit before ({result["before"][:10]})
and after ({result["after"][:10]}), each checked out in a git worktree of its own with a
database of its own, both running this checkout's `benchmarks/peers/` settings, interleaved
in one invocation, the sides alternating which goes first (AB, BA, ...). Each round runs, on
each side: the drain of {s["jobs"]:,} no-op jobs by `runworkers` {s["shape"].replace("x", " × ")}
(measured from the first finished job for at most {s["cap"]:g} s), once with the quiet
logging every benchmark uses (`django.tasks` at WARNING) and once with Django's default
logging (no `LOGGING` setting: what a user gets); the outbox relay (`skipqueue_relay
--burst`) sending {s["messages"]:,} messages to RabbitMQ, from its start to its exit; and the
flow drain of {s["flow_jobs"]:,} no-op jobs over {int(keys):,} keys at a concurrency limit
of {limit} (enqueued once by each side's code, then restored with their keys' slots before
each run), by the same workers, for at most {s["flow_cap"]:g} s. Each side: median
[min–max] (IQR: the quartiles) of {s["rounds"]} rounds; after ÷ before of the medians, and
the lowest and highest after ÷ before of one round's pair (run back to back). Throughput
above 1× is faster after, CPU below 1× is cheaper after.

{table(header, _rows(result["summary"]))}

Measured {start["at"]} to {end["at"]} on {m["cpu"]}, {m["cores"]} cores, {m["ram_gib"]} GiB,
Python {m["python"]}, the shared MariaDB on 127.0.0.1, RabbitMQ on the same host. Load
average at the start {load}, at the end {load_end}; raw runs in `docs/benchmarks/raw/ab.json`.

{result.get("notes") or ""}
"""
