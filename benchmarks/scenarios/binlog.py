"""Scenario 8, binary log: drain and enqueue with the binary log on (FULL, MINIMAL), against off.

MySQL 8.0 and later write a binary log by default and a production MariaDB usually keeps one
for replication, while the other scenarios ran with it off. This one starts three private
MariaDB servers (`mariadbd` of the same installation, each in its own temporary directory)
with the same settings, `innodb_flush_log_at_trx_commit=1`, READ COMMITTED and a 128 MiB
buffer pool, except the binary log: off; on with `--log-bin --binlog-format=ROW
--sync-binlog=1` and the default row image (FULL); and the same with
`--binlog-row-image=MINIMAL`. Against each in turn, the order rotating from one repetition to
the next (off, FULL, MINIMAL; then FULL, MINIMAL, off; then MINIMAL, off, FULL), it runs the
drain of N no-op jobs at 4 processes × 4 threads (claim batch 4) by django-skipqueue and by the
raw SQL reference, as scenario 1 does, and the single (one transaction per job) and bulk
enqueues of scenario 2. Figures are FULL ÷ off and MINIMAL ÷ off, all measured in the same
run; the binary log written per job is the server's `Binlog_bytes_written` over the measured
operation.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from shutil import rmtree

import psutil

from benchmarks import machine
from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent, interleaved
from benchmarks.scenarios import drain, enqueue
from benchmarks.stats import ratio, summary
from benchmarks.systems import System
from tests.support.mariadb_server import PrivateMariaDB, available

#: Server options every server gets (PrivateMariaDB adds --no-defaults and its own paths).
COMMON = (
    "--innodb-flush-log-at-trx-commit=1",
    "--innodb-buffer-pool-size=128M",
    "--transaction-isolation=READ-COMMITTED",
)
#: What sets the servers apart; the others are divided by BASELINE.
LOG_BIN = ("--log-bin=binlog", "--binlog-format=ROW", "--sync-binlog=1")
SERVERS = {
    "off": ("--skip-log-bin",),
    "on": LOG_BIN,
    "minimal": (*LOG_BIN, "--binlog-row-image=MINIMAL"),
}
BASELINE = "off"
SHAPE = drain.Shape(4, 4)
MEASURES = ("drain", "single", "bulk")
#: The figures kept for each measure (rates for all; CPU only where workers run).
KEYS = {
    "drain": ("jobs_per_s", "cpu_ms_per_job", "server_cpu_ms_per_job", "binlog_bytes_per_job"),
    "single": ("jobs_per_s", "binlog_bytes_per_job"),
    "bulk": ("jobs_per_s", "binlog_bytes_per_job"),
}
ADDRESS = ("BENCH_DB_HOST", "BENCH_DB_PORT")


def run(ctx: Context) -> dict[str, object]:
    count, cap = ctx.scale(20_000, 5_000), ctx.scale(30, 10)
    counts = enqueue.mode_counts(ctx)
    systems = ctx.chosen(("ours", "raw"))
    tests = [(kind, system) for kind in MEASURES for system in systems]
    runs: dict[str, dict[str, list[dict]]] = {}
    if not systems:
        ctx.say("binlog: skipped (it runs ours and raw only)")
        return {"count": count, "runs": runs, "table": {}}
    with private_servers(ctx) as (servers, folder):
        backlogs = {
            name: _prepare(ctx, server, systems, count) for name, server in servers.items()
        }
        conditions = _conditions(servers, folder)
        order = interleaved(ctx.reps, tests, list(servers), rotate=True)
        for rep, (kind, system), name in order:
            server, backlog = servers[name], backlogs[name][system.name]
            with pointed_at(server):
                if kind == "drain":
                    figures = _drain(ctx, server, system, backlog, count, cap)
                else:
                    figures = _enqueue(server, system, kind, counts[kind])
            runs.setdefault(f"{kind}/{system.name}", {}).setdefault(name, []).append(figures)
            ctx.say(f"binlog {name}: {kind} rep {rep + 1} {system.label}: {_brief(figures)}")
    return {
        "count": count,
        "cap_s": cap,
        "counts": {"single": counts["single"], "bulk": counts["bulk"]},
        "shape": SHAPE.label,
        "runs": runs,
        "table": table_of(runs),
        "conditions": conditions,
    }


@contextmanager
def private_servers(ctx: Context) -> Iterator[tuple[dict[str, PrivateMariaDB], Path]]:
    """Start the servers in a temporary directory; stop them and remove it, come what may."""
    if not available():
        raise RuntimeError("the binlog scenario needs mariadbd and mariadb-install-db")
    folder = Path(tempfile.mkdtemp(prefix="sq-bench-binlog-"))
    with ExitStack() as cleanup:
        cleanup.callback(rmtree, folder, ignore_errors=True)
        servers: dict[str, PrivateMariaDB] = {}
        for name, options in SERVERS.items():
            (folder / name).mkdir()
            server = PrivateMariaDB(folder / name, *COMMON, *options)
            cleanup.callback(server.stop)
            servers[name] = server.start(timeout=120)
            ctx.say(f"binlog {name}: private server on port {server.port} ({' '.join(options)})")
        yield servers, folder


@contextmanager
def pointed_at(server: PrivateMariaDB) -> Iterator[None]:
    """Point the agents, workers and backlogs started inside at ``server``; restore after.

    Every process the harness starts copies ``os.environ`` (``System.env``), and the peers'
    settings, the raw worker and ``Backlog`` read BENCH_DB_HOST/BENCH_DB_PORT from it.
    """
    saved = {key: os.environ.get(key) for key in ADDRESS}
    os.environ.update(BENCH_DB_HOST="127.0.0.1", BENCH_DB_PORT=str(server.port))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _prepare(
    ctx: Context, server: PrivateMariaDB, systems: Sequence[System], count: int
) -> dict[str, Backlog]:
    """Create and migrate the systems' databases on ``server``; fill and snapshot each queue."""
    with pointed_at(server):
        for system in {system.database: system for system in systems}.values():
            agent(system, "setup")
        return {system.name: drain.fill(ctx, system, count) for system in systems}


def _conditions(servers: dict[str, PrivateMariaDB], folder: Path) -> dict[str, object]:
    """Each server's options and settings, and the file system its data lives on."""
    described = {}
    for name, server in servers.items():
        with pointed_at(server):
            described[name] = {"options": list(SERVERS[name]), **machine.database()}
            described[name]["binlog_row_image"] = server.query("SELECT @@binlog_row_image")[0][0]
    mounts = [p for p in psutil.disk_partitions(all=True) if str(folder).startswith(p.mountpoint)]
    mount = max(mounts, key=lambda p: len(p.mountpoint), default=None)
    return {
        "servers": described,
        "common_options": list(COMMON),
        "data_filesystem": f"{mount.fstype} ({mount.device})" if mount else "unknown",
    }


def _binlog_bytes(server: PrivateMariaDB) -> int:
    rows = server.query("SHOW GLOBAL STATUS LIKE 'Binlog_bytes_written'")
    return int(rows[0][1]) if rows else 0


def _drain(
    ctx: Context, server: PrivateMariaDB, system: System, backlog: Backlog, count: int, cap: float
) -> dict:
    """Refill the queue, then drain it with the workers at SHAPE, counting the log written."""
    backlog.restore()
    before = _binlog_bytes(server)
    assert server.process is not None, "started by private_servers"
    pid = server.process.pid
    figures = drain.measure(ctx, system, backlog, SHAPE, count, cap, refill=False, server_pid=pid)
    jobs = figures.get("jobs")
    written = _binlog_bytes(server) - before
    per_job = written / jobs if isinstance(jobs, int) and jobs else None
    return figures | {"binlog_bytes_per_job": per_job}


def _enqueue(server: PrivateMariaDB, system: System, mode: str, count: int) -> dict:
    before = _binlog_bytes(server)
    per_s = enqueue.rate(system, mode, count)
    written = _binlog_bytes(server) - before
    return {"jobs_per_s": per_s, "binlog_bytes_per_job": written / count}


def _brief(figures: dict) -> str:
    if "error" in figures:
        return str(figures["error"])
    rate = figures.get("jobs_per_s")
    logged = figures.get("binlog_bytes_per_job")
    text = f"{rate:.0f} jobs/s" if rate else "no rate"
    return text + (f", {logged:.0f} binlog bytes/job" if logged else "")


def table_of(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict]]:
    """Per test and figure: each server's summary (median, range) under its name, and under
    "ratio" and "paired" each server's median ÷ the baseline's and the per-repetition ratios.

    The per-repetition ratios pair the runs of one repetition, which ran back to back. A
    server missing from ``runs`` (a run taken before it was added) gets empty figures, so the
    report of an older run shows "–" for it.
    """
    table: dict[str, dict[str, dict]] = {}
    for test, by_server in runs.items():
        for key in KEYS[test.split("/")[0]]:
            values = {name: [r.get(key) for r in by_server.get(name, [])] for name in SERVERS}
            figures: dict = {name: summary(found) for name, found in values.items()}
            base = values[BASELINE]
            figures["ratio"] = {
                name: ratio(figures[name]["median"], figures[BASELINE]["median"])
                for name in SERVERS
                if name != BASELINE
            }
            figures["paired"] = {
                name: summary([ratio(b, a) for a, b in zip(base, values[name], strict=False)])
                for name in SERVERS
                if name != BASELINE
            }
            table.setdefault(test, {})[key] = figures
    return table
