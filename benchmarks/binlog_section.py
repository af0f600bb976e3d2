"""Scenario 8's section of docs/benchmarks.md: binary log on ÷ off, the servers, what it means."""

from __future__ import annotations

from typing import Any

from benchmarks.report_text import BINLOG_TEXT, scenario_notes
from benchmarks.systems import SYSTEMS

FIGURES = {
    "jobs_per_s": ("jobs/s", 0),
    "cpu_ms_per_job": ("worker CPU ms/job", 3),
    "server_cpu_ms_per_job": ("server CPU ms/job", 3),
}
SETTINGS = (
    "version",
    "log_bin",
    "binlog_format",
    "binlog_row_image",
    "sync_binlog",
    "innodb_flush_log_at_trx_commit",
    "transaction_isolation",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_doublewrite",
)


def section(result: dict[str, Any], figure: str | None = None) -> str:
    if not result.get("table"):
        return ""
    return "\n\n".join(
        [scenario_notes("binlog", result), _figures(result), _servers(result), _meaning(result)]
    )


def _test_label(result: dict[str, Any], test: str) -> str:
    kind, system = test.split("/")
    label = SYSTEMS[system].label
    processes, threads = result["shape"].split("x")
    return {
        "drain": f"Drain of {result['count']:,} jobs, {processes} × {threads}, {label}",
        "single": f"Single enqueue ({result['counts']['single']:,} transactions), {label}",
        "bulk": f"Bulk enqueue ({result['counts']['bulk']:,} jobs), {label}",
    }[kind]


def _figures(result: dict[str, Any]) -> str:
    from benchmarks.report import cell, table, times

    rows = []
    for test, by_key in result["table"].items():
        written = by_key.get("binlog_bytes_per_job", {}).get("on")
        for key, (unit, digits) in FIGURES.items():
            if key not in by_key:
                continue
            f = by_key[key]
            paired = f["paired"]
            rows.append(
                [
                    f"{_test_label(result, test)}: {unit}",
                    cell(f["off"], digits),
                    cell(f["on"], digits),
                    times(f["ratio"]),
                    f"{times(paired['min'])}–{times(paired['max'])}" if paired["runs"] else "–",
                    cell(written) if key == "jobs_per_s" else "",
                ]
            )
    header = [
        "Measure",
        "binlog off",
        "binlog on",
        "on ÷ off",
        "on ÷ off, each repetition",
        "binary log bytes/job",
    ]
    return table(header, rows)


def _servers(result: dict[str, Any]) -> str:
    from benchmarks.report import table

    conditions = result.get("conditions") or {}
    servers = conditions.get("servers") or {}
    if not servers:
        return ""
    off, on = servers.get("off", {}), servers.get("on", {})
    rows = [
        ["options", _code(off.get("options")), _code(on.get("options"))],
        *([name, str(off.get(name)), str(on.get(name))] for name in SETTINGS),
    ]
    common = _code(conditions.get("common_options"))
    where = conditions.get("data_filesystem", "unknown")
    return (
        table(["Private server", "binlog off", "binlog on"], rows)
        + f"\n\nBoth servers: `mariadbd --no-defaults` (tests/mariadb_server.py) with {common};"
        f" both data directories on {where}. The shared server on 3306 is not used."
    )


def _code(options: list[str] | None) -> str:
    return " ".join(f"`{option}`" for option in options or []) or "–"


def _meaning(result: dict[str, Any]) -> str:
    from benchmarks.report import times

    table = result["table"]

    def median(test: str, key: str, server: str) -> float | None:
        return table.get(test, {}).get(key, {}).get(server, {}).get("median")

    def ratio(test: str, key: str = "jobs_per_s") -> str:
        return times(table.get(test, {}).get(key, {}).get("ratio"))

    def added_ms(test: str) -> str:
        """The time per job the binary log adds (from the medians of the rates)."""
        off, on = median(test, "jobs_per_s", "off"), median(test, "jobs_per_s", "on")
        if not off or not on:
            return "–"
        added = 1000 / on - 1000 / off
        return f"{abs(added):.2f} ms {'more' if added >= 0 else 'less'}"

    def written(test: str) -> str:
        value = median(test, "binlog_bytes_per_job", "on")
        return "–" if value is None else f"{value:,.0f}"

    return BINLOG_TEXT.format(
        single_ours=ratio("single/ours"),
        single_ms=added_ms("single/ours"),
        single_raw=ratio("single/raw"),
        single_raw_ms=added_ms("single/raw"),
        bytes_drain=written("drain/ours"),
        server_ours=ratio("drain/ours", "server_cpu_ms_per_job"),
        drain_ours=ratio("drain/ours"),
        drain_ms=added_ms("drain/ours"),
        drain_raw=ratio("drain/raw"),
        bytes_bulk=written("bulk/ours"),
        bulk_ours=ratio("bulk/ours"),
    ).strip()
