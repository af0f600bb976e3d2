"""Scenario 8's section of docs/benchmarks.md: binary log on ÷ off, the servers, what it means.

The figures are tabulated again from the runs (``binlog.table_of``), so a run recorded before
the MINIMAL server existed still renders, with "–" where that server's figures would be.
"""

from __future__ import annotations

from typing import Any

from benchmarks.report.markdown import cell, table, times
from benchmarks.report.prose import fragment, scenario_notes
from benchmarks.report.registry import Inputs, section
from benchmarks.scenarios.binlog import BASELINE, SERVERS, table_of
from benchmarks.systems import SYSTEMS

#: Column titles of the servers, in the order of SERVERS, and their short names.
LABELS = {"off": "binlog off", "on": "binlog on, FULL", "minimal": "binlog on, MINIMAL"}
SHORT = {"off": "off", "on": "FULL", "minimal": "MINIMAL"}
#: The servers that write a binary log, each compared with the baseline.
LOGGED = tuple(name for name in SERVERS if name != BASELINE)

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


def _render(result: dict[str, Any], figure: str | None = None) -> str:
    if not result.get("table"):
        return ""
    measured = table_of(result.get("runs") or {})
    return "\n\n".join(
        [
            scenario_notes("binlog", result),
            _figures(result, measured),
            _servers(result),
            _meaning(measured),
        ]
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


def _figures(result: dict[str, Any], measured: dict[str, dict[str, dict]]) -> str:
    rows = []
    for test, by_key in measured.items():
        written = by_key.get("binlog_bytes_per_job", {})
        for key, (unit, digits) in FIGURES.items():
            if key not in by_key:
                continue
            f = by_key[key]
            rows.append(
                [
                    f"{_test_label(result, test)}: {unit}",
                    *(cell(f.get(name), digits) for name in SERVERS),
                    *(_ratio(f, name) for name in LOGGED),
                    *(cell(written.get(name)) if key == "jobs_per_s" else "" for name in LOGGED),
                ]
            )
    header = [
        "Measure",
        *(LABELS[name] for name in SERVERS),
        *(f"{SHORT[name]} ÷ off [each repetition]" for name in LOGGED),
        *(f"binary log bytes/job, {SHORT[name]}" for name in LOGGED),
    ]
    return table(header, rows)


def _ratio(figure: dict[str, Any], name: str) -> str:
    """'ratio of medians [lowest–highest ratio of one repetition]', or '–'."""

    median = (figure.get("ratio") or {}).get(name)
    paired = (figure.get("paired") or {}).get(name) or {}
    if median is None:
        return "–"
    if not paired.get("runs"):
        return times(median)
    return f"{times(median)} [{times(paired['min'])}–{times(paired['max'])}]"


def _servers(result: dict[str, Any]) -> str:

    conditions = result.get("conditions") or {}
    servers = conditions.get("servers") or {}
    if not servers:
        return ""
    described = [servers.get(name) or {} for name in SERVERS]
    rows = [
        ["options", *(_code(server.get("options")) for server in described)],
        *(
            [setting, *(str(server.get(setting, "–")) for server in described)]
            for setting in SETTINGS
        ),
    ]
    common = _code(conditions.get("common_options"))
    where = conditions.get("data_filesystem", "unknown")
    return (
        table(["Private server", *(LABELS[name] for name in SERVERS)], rows)
        + "\n\nEvery server: `mariadbd --no-defaults` (tests/support/mariadb_server.py) with "
        f"{common};"
        f" their data directories on {where}. The shared server on 3306 is not used."
    )


def _code(options: list[str] | None) -> str:
    return " ".join(f"`{option}`" for option in options or []) or "–"


def _meaning(table: dict[str, dict[str, dict]]) -> str:

    def median(test: str, key: str, server: str) -> float | None:
        return table.get(test, {}).get(key, {}).get(server, {}).get("median")

    def ratio(test: str, key: str = "jobs_per_s", server: str = "on") -> str:
        return times((table.get(test, {}).get(key, {}).get("ratio") or {}).get(server))

    def added_ms(test: str) -> str:
        """The time per job the binary log adds (from the medians of the rates)."""
        off, on = median(test, "jobs_per_s", "off"), median(test, "jobs_per_s", "on")
        if not off or not on:
            return "–"
        added = 1000 / on - 1000 / off
        return f"{abs(added):.2f} ms {'more' if added >= 0 else 'less'}"

    def written(test: str, server: str = "on") -> str:
        value = median(test, "binlog_bytes_per_job", server)
        return "–" if value is None else f"{value:,.0f}"

    def minimal_share(test: str) -> str:
        """MINIMAL's binary log bytes per job ÷ FULL's."""
        full = median(test, "binlog_bytes_per_job", "on")
        minimal = median(test, "binlog_bytes_per_job", "minimal")
        return times(minimal / full if full and minimal is not None else None)

    return (
        fragment("binlog")
        .format(
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
            minimal_bytes_drain=written("drain/ours", "minimal"),
            minimal_share_drain=minimal_share("drain/ours"),
            minimal_bytes_bulk=written("bulk/ours", "minimal"),
            minimal_share_bulk=minimal_share("bulk/ours"),
            minimal_drain_ours=ratio("drain/ours", server="minimal"),
            minimal_drain_raw=ratio("drain/raw", server="minimal"),
            minimal_single_ours=ratio("single/ours", server="minimal"),
            minimal_bulk_ours=ratio("bulk/ours", server="minimal"),
        )
        .strip()
    )


@section(170, "binlog")
def binlog(inputs: Inputs) -> str:
    return _render(inputs.results["binlog"], inputs.figures.get("binlog"))
