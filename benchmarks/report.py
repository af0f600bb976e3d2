"""Write docs/benchmarks.md from the raw results: the intro, the environment, every table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import (
    admin_section,
    binlog_section,
    metrics_section,
    outbox_section,
    plots,
    reservations_section,
    targets,
)
from benchmarks.harness import page
from benchmarks.report_text import ANALYSIS, INTRO, METHOD, scenario_notes
from benchmarks.stats import ratio
from benchmarks.systems import PEER_ORDER, SYSTEMS

LABELS = {name: SYSTEMS[name].label for name in PEER_ORDER} | {
    "ours_nowake": "django-skipqueue (no wake-up)"
}


def write(results: dict[str, Any], quick: bool) -> Path:
    figures = plots.draw(results, quick)
    parts = [INTRO, METHOD, environment(results.get("environment", {}), quick)]
    parts.append(targets.section(results))
    for name, render in SECTIONS.items():
        if results.get(name):
            parts.append(render(results[name], figures.get(name)))
    if results.get("admin_render") and not quick:
        parts.append(admin_section.section(results["admin_render"]))
    if results.get("outbox") and not quick:
        parts.append(outbox_section.section(results["outbox"]))
    if results.get("metrics") and not quick:
        parts.append(metrics_section.section(results["metrics"]))
    if results.get("before_after") and not quick:
        from benchmarks.before_after import section as before_after_section

        parts.append(before_after_section(results["before_after"]))
    if results.get("throughput") and not quick:
        from benchmarks.throughput import section as throughput_section

        parts.append(throughput_section(results["throughput"]))
    if results.get("deep_backlog") and not quick:
        from benchmarks.deep_backlog import section as deep_backlog_section

        parts.append(deep_backlog_section(results["deep_backlog"]))
    if (results.get("flow_drain") or results.get("flow_before_after")) and not quick:
        from benchmarks.flow_section import section as flow_section

        parts.append(flow_section(results.get("flow_drain"), results.get("flow_before_after")))
    parts.append(ANALYSIS)
    path = page(quick)
    path.write_text("\n\n".join(part.strip() for part in parts if part) + "\n")
    return path


def cell(figure: dict | None, digits: int = 0) -> str:
    """'median [min–max]' of a summary, or '–' when there is no value."""
    if not figure or figure.get("median") is None:
        return "–"
    f = f"{{:,.{digits}f}}"
    return f"{f.format(figure['median'])} [{f.format(figure['min'])}–{f.format(figure['max'])}]"


def times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def image(path: str | None, alt: str) -> str:
    return f"![{alt}]({path})" if path else ""


def environment(env: dict, quick: bool) -> str:
    if not env:
        return ""
    m, db = env["machine"], env["database"]
    pool = int(db.get("innodb_buffer_pool_size") or 0) / 2**20
    rows = [
        ["CPU", f"{m['cpu']}, {m['cores']} cores"],
        ["Memory", f"{m['ram_gib']} GiB"],
        ["Kernel, Python", f"{m['kernel']}, Python {m['python']}"],
        ["Database", f"{db.get('version')}, on the same host (loopback TCP)"],
        ["innodb_flush_log_at_trx_commit", str(db.get("innodb_flush_log_at_trx_commit"))],
        [
            "Binary log",
            f"log_bin={db.get('log_bin')}, binlog_format={db.get('binlog_format')},"
            f" sync_binlog={db.get('sync_binlog')}",
        ],
        [
            "Isolation",
            "READ COMMITTED on every connection (server default "
            f"{db.get('transaction_isolation')})",
        ],
        ["innodb_buffer_pool_size", f"{pool:.0f} MiB"],
        ["Redis", str(env.get("redis"))],
        [
            "Runs per figure",
            f"{env.get('reps')}{' (quick mode: smoke figures only)' if quick else ''}",
        ],
    ]
    versions = env.get("versions") or {}
    if versions:
        rows.append(["Peers", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))])
    note = (
        "\n\nThe CPU, kernel and Python above are those of the latest invocation. Scenarios run"
        " on their own are re-measured on whichever host of the same kind the session had: each"
        " scenario below states when it ran, on which CPU and Python, the load average at its"
        " start and how many other test or worker processes were running then. Compare systems"
        " within one scenario (they ran interleaved on the same host), not across scenarios."
    )
    return "## The machine and the database\n\n" + table(["", ""], rows) + note


def drain(result: dict, figure: str | None) -> str:
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


def enqueue(result: dict, figure: str | None) -> str:
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


def latency(result: dict, figure: str | None) -> str:
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


def history(result: dict, figure: str | None) -> str:
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


def purge(result: dict, figure: str | None) -> str:
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


def sweep(result: dict, figure: str | None) -> str:
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


def idle(result: dict, figure: str | None) -> str:
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


SECTIONS = {
    "drain": drain,
    "enqueue": enqueue,
    "latency": latency,
    "history": history,
    "purge": purge,
    "sweep": sweep,
    "idle": idle,
    "binlog": binlog_section.section,
    "reservations": reservations_section.section,
}
