"""Throughput for short jobs (``python -m benchmarks throughput``, raw/throughput.json)."""

from __future__ import annotations

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section


@section(240, "throughput", full_only=True)
def throughput(inputs: Inputs) -> str:
    return _render(inputs.results["throughput"])


def _render(result: dict) -> str:
    """The section of docs/benchmarks.md for the last run (raw/throughput.json)."""
    med = result["medians"]

    def rate(shape: str, name: str) -> float | None:
        return med.get(shape, {}).get(name, {}).get("jobs_per_s")

    def cpu(shape: str, name: str) -> float | None:
        return med.get(shape, {}).get(name, {}).get("cpu_ms_per_job")

    def fig(value: float | None, digits: int = 0) -> str:
        return "–" if value is None else f"{value:,.{digits}f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "–" if not a or not b else f"{a / b:.2f}×"

    rows = []
    for shape in ("1x1", "4x1", "4x4", "2x16"):
        base = rate(shape, "ours")
        off = rate(f"{shape} prefetch 0", "ours")
        rows.append(
            [
                shape,
                fig(base),
                fig(off),
                fig(rate(shape, "raw")),
                fig(rate(shape, "raw_min")),
                fig(rate(shape, "celery")),
                ratio(base, rate(shape, "raw_min")),
                ratio(off, rate(shape, "raw_min")),
                ratio(base, rate(shape, "celery")),
                f"{fig(cpu(shape, 'ours'), 3)} / {fig(cpu(shape, 'raw_min'), 3)}",
            ]
        )
    header = [
        "P × T",
        "ours (prefetch auto)",
        "ours (prefetch 0)",
        "raw, our table",
        "raw, minimal table",
        "Celery -c P×T",
        "auto ÷ minimal",
        "prefetch 0 ÷ minimal",
        "auto ÷ Celery",
        "CPU ms/job ours / minimal",
    ]
    pf = "4x1 prefetch 50"
    ahead = table(
        [
            "shape",
            "ours jobs/s",
            "raw minimal, batch 50, jobs/s",
            "ratio",
            "CPU ms/job ours / minimal",
        ],
        [
            [
                "4 × 1, `--prefetch 50`",
                fig(rate(pf, "ours")),
                fig(rate(pf, "raw_min")),
                ratio(rate(pf, "ours"), rate(pf, "raw_min")),
                f"{fig(cpu(pf, 'ours'), 3)} / {fig(cpu(pf, 'raw_min'), 3)}",
            ]
        ],
    )
    enq = result["enqueue"]
    enqueue = table(
        ["enqueue", "ours jobs/s", "reference jobs/s", "ratio"],
        [
            *(
                [
                    [
                        "bulk (`enqueue_many` / multi-row INSERTs from Python into the minimal "
                        "table, a row of parameters a job)",
                        fig(enq["ours_bulk"]),
                        fig(enq["raw_min_params_bulk"]),
                        ratio(enq["ours_bulk"], enq["raw_min_params_bulk"]),
                    ]
                ]
                if "raw_min_params_bulk" in enq
                else []
            ),
            [
                "bulk (`enqueue_many` / the minimal table's INSERT of literal rows: the server "
                "alone)",
                fig(enq["ours_bulk"]),
                fig(enq["raw_min_bulk"]),
                ratio(enq["ours_bulk"], enq["raw_min_bulk"]),
            ],
            *(
                [
                    [
                        "bulk floor (literal rows into django-skipqueue's table, all 28 stored "
                        "columns named / the minimal table's literal rows)",
                        fig(enq["ours_table_bulk"]),
                        fig(enq["raw_min_bulk"]),
                        ratio(enq["ours_table_bulk"], enq["raw_min_bulk"]),
                    ]
                ]
                if "ours_table_bulk" in enq
                else []
            ),
            [
                "single (`.enqueue()` / Celery `.delay()`)",
                fig(enq["ours_single"]),
                fig(enq["celery_single"]),
                ratio(enq["ours_single"], enq["celery_single"]),
            ],
        ],
    )
    settings, m = result["settings"], result["machine"]
    start, end = result["started"], result["ended"]
    load = ", ".join(f"{x:.1f}" for x in start["loadavg"])
    load_end = ", ".join(f"{x:.1f}" for x in end["loadavg"])
    shared = (
        ""
        if start["loadavg"][0] < 3
        else ": other test runs shared the two cores throughout; the interleaving makes that"
        " load hit every system alike, not evenly within a round"
    )
    return f"""
## Throughput for short jobs (issue 23)

`python -m benchmarks throughput --rounds {settings["rounds"]} --jobs {settings["jobs"]}`: no-op
jobs drained by each system in turn, shape by shape, the order reversed every other round
(medians of {settings["rounds"]} rounds; {int(settings["jobs"]):,} jobs a run, measured from the
first finished job for at most {settings["cap"]} s). The raw loops claim
T jobs per claim in each of P processes (`raw_worker --batch T`), on django-skipqueue's own
table and on a minimal one (`raw_min_job`: the primary key and the claim index, nothing else),
so the table's own cost shows. Celery + Redis runs prefork with `-c P×T`. "Prefetch 0" is
`runworkers --prefetch 0`: a process claims only into free threads, as before claiming ahead.
Every system logs at WARNING (Celery `-l WARNING`; the Django settings set `django.tasks`,
whose receivers otherwise write two INFO lines a job, to WARNING).

{table(header, rows)}

Claiming ahead against the minimal loop at 50 jobs a claim with 4 processes:

{ahead}

{enqueue}

Measured {start["at"]} to {end["at"]} on {m["cpu"]}, {m["cores"]} cores, {m["ram_gib"]} GiB,
Python {m["python"]}, the shared MariaDB on 127.0.0.1 (`innodb_flush_log_at_trx_commit=1`:
every commit waits for the disk). Load average at the start {load}, at the end {load_end}{shared}.
Raw runs: `docs/benchmarks/raw/throughput.json`.

{result.get("notes", "")}
"""
