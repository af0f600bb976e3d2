"""The sections of the suite's scenarios 1 to 7 (``python -m benchmarks run``), in order."""

from __future__ import annotations

from benchmarks.report.markdown import cell, image, table, times
from benchmarks.report.prose import scenario_notes
from benchmarks.report.registry import Inputs, section
from benchmarks.stats import ratio
from benchmarks.systems import PEER_ORDER, SYSTEMS

LABELS = {name: SYSTEMS[name].label for name in PEER_ORDER} | {
    "ours_nowake": "django-skipqueue (no wake-up)"
}


@section(100, "drain")
def drain(inputs: Inputs) -> str:
    result, figure = inputs.results["drain"], inputs.figures.get("drain")
    out = [scenario_notes("drain", result), image(figure, "Drain throughput")]
    for shape, by_system in result["table"].items():
        ours = by_system.get("ours", {}).get("jobs_per_s", {}).get("median")
        rows = []
        for name in PEER_ORDER:
            if name not in by_system:
                continue
            figs = by_system[name]
            capped = " (capped)" if figs.get("capped") else ""
            rows.append(
                [
                    LABELS[name] + capped,
                    cell(figs["jobs_per_s"]),
                    cell(figs["cpu_ms_per_job"], 3),
                    cell(figs["server_cpu_ms_per_job"], 3),
                    times(ratio(ours, figs["jobs_per_s"]["median"])),
                ]
            )
        processes, threads = shape.split("x")
        out.append(
            f"**{processes} process(es) × {threads} thread(s) (claim batch {threads})**\n\n"
            + table(
                [
                    "System",
                    "jobs/s",
                    "worker CPU ms/job",
                    "server CPU ms/job",
                    "django-skipqueue ÷ system",
                ],
                rows,
            )
        )
    return "\n\n".join(out)


@section(110, "enqueue")
def enqueue(inputs: Inputs) -> str:
    result = inputs.results["enqueue"]
    modes = ["single", "txn", "bulk"]
    rows = []
    for name in PEER_ORDER:
        figs = [result["table"].get(mode, {}).get(name) for mode in modes]
        if any(figs):
            rows.append([LABELS[name], *(cell(f) for f in figs)])
    header = [
        "System",
        f"single (jobs/s, {result['counts']['single']} jobs)",
        f"one transaction ({result['counts']['txn']})",
        f"bulk API ({result['counts']['bulk']})",
    ]
    return "\n\n".join([scenario_notes("enqueue", result), table(header, rows)])


@section(120, "latency")
def latency(inputs: Inputs) -> str:
    result, figure = inputs.results["latency"], inputs.figures.get("latency")
    out = [scenario_notes("latency", result), image(figure, "Commit-to-start latency")]
    for load, by_key in result["table"].items():
        rows = [
            [
                result["labels"].get(key, key),
                cell(f["p50_ms"], 1),
                cell(f["p95_ms"], 1),
                cell(f["p99_ms"], 1),
                str(f.get("lost", 0)),
            ]
            for key, f in by_key.items()
        ]
        out.append(
            f"**Offered load: {load}**\n\n"
            + table(["System", "p50 ms", "p95 ms", "p99 ms", "not started"], rows)
        )
    return "\n\n".join(out)


@section(130, "history")
def history(inputs: Inputs) -> str:
    result, figure = inputs.results["history"], inputs.figures.get("history")
    rows = [
        [
            f"{int(size):,}",
            cell(f["claim_ms_median"], 2),
            cell(f["claim_ms_p95"], 2),
            cell(f["records_per_claim"], 0),
        ]
        for size, f in result["table"].items()
    ]
    summary_line = (
        f"Largest history ÷ empty table: claim time {times(result['ratio_time'])}, "
        f"records read {times(result['ratio_records'])}."
    )
    return "\n\n".join(
        [
            scenario_notes("history", result),
            image(figure, "Claim cost"),
            table(
                [
                    "Finished rows",
                    "claim ms (median)",
                    "claim ms (p95)",
                    f"records read per claim of {result['limit']}",
                ],
                rows,
            ),
            summary_line,
        ]
    )


@section(140, "purge")
def purge(inputs: Inputs) -> str:
    result = inputs.results["purge"]
    rows = [
        [
            f"{variant} purge",
            cell(f["jobs_per_s"]),
            cell(f["claim_p50_ms"], 2),
            cell(f["claim_p95_ms"], 2),
            cell(f["history_deleted"]),
        ]
        for variant, f in result["table"].items()
    ]
    line = f"Throughput with purge ÷ without: {times(result.get('ratio_throughput'))}."
    return "\n\n".join(
        [
            scenario_notes("purge", result),
            table(
                [
                    "Run",
                    "jobs/s",
                    "claim p50 ms",
                    "claim p95 ms",
                    "history rows deleted during the run",
                ],
                rows,
            ),
            line,
        ]
    )


@section(150, "sweep")
def sweep(inputs: Inputs) -> str:
    result, figure = inputs.results["sweep"], inputs.figures.get("sweep")
    rows = []
    for config, by_system in result["table"].items():
        size, mode = config.split("/")
        ours, raw = by_system.get("ours", {}), by_system.get("raw", {})
        rows.append(
            [
                size,
                mode,
                cell(ours.get("jobs_per_s")),
                cell(ours.get("cpu_ms_per_job"), 3),
                cell(raw.get("jobs_per_s")),
                cell(raw.get("cpu_ms_per_job"), 3),
                times(ours.get("vs_raw")),
            ]
        )
    header = [
        "claim batch",
        "completions",
        "django-skipqueue jobs/s",
        "CPU ms/job",
        "raw SQL jobs/s",
        "CPU ms/job",
        "django-skipqueue ÷ raw",
    ]
    return "\n\n".join(
        [scenario_notes("sweep", result), image(figure, "Batch size sweep"), table(header, rows)]
    )


@section(160, "idle")
def idle(inputs: Inputs) -> str:
    result = inputs.results["idle"]
    rows = [
        [
            LABELS[name],
            cell(f["cpu_percent"], 2),
            cell(f["rss_mib_total"], 0),
            cell(f["processes"], 0),
        ]
        for name, f in result["table"].items()
    ]
    return "\n\n".join(
        [
            scenario_notes("idle", result),
            table(
                [
                    "System",
                    "worker CPU, % of a core",
                    "RSS MiB (all processes)",
                    "processes",
                ],
                rows,
            ),
        ]
    )
