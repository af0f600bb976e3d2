"""Throughput for short jobs (issue 23): the drain and the enqueue against two raw references
and Celery, interleaved in one invocation.

``python -m benchmarks throughput [--rounds 3] [--jobs 6000]`` drains no-op jobs with
django-skipqueue (``runworkers``, prefetch adaptive and off), the raw SQL loop on
django-skipqueue's own table (``raw_worker``), the same loop on a minimal table with one index
besides the primary key (``raw_min_job``: the claim index), and Celery + Redis at the same
concurrency (prefork ``-c P x T``), shape by shape, the systems' order reversed every other
round (1 × 1, 4 × 1, 4 × 4 and 2 × 16, each also with ``--prefetch 0``; 4 × 1 at
``--prefetch 50`` against the minimal loop at batch 50). Then bulk enqueue (``enqueue_many``
against multi-row INSERTs of 1,000 jobs into the minimal table, from Python with a row of
parameters a job and as literal rows, and the literal INSERT into django-skipqueue's table:
the table's own floor) and single enqueues (``.enqueue()`` against Celery's ``.delay()``).

Databases: ``BENCH_DB_PREFIX`` (default ``sq_bench``) for django-skipqueue and the raw loop,
``PREFIX_min`` for the minimal table. Writes ``docs/benchmarks/raw/throughput.json`` (``--out``
elsewhere) and prints the medians and ratios; ``python -m benchmarks report`` puts the section
on the page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from benchmarks.backlog import Backlog, connect, stored_columns
from benchmarks.harness import DOCS_DIR, WORK_DIR, agent
from benchmarks.machine import machine
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.scenarios.drain import watch
from benchmarks.systems import DB_PREFIX, OUR_PYTHON, SYSTEMS, System

MIN_TABLE = "raw_min_job"
MIN_DDL = f"""CREATE TABLE IF NOT EXISTS {MIN_TABLE} (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  queue_name VARCHAR(32) NOT NULL,
  status VARCHAR(16) NOT NULL,
  priority_rank INT NOT NULL DEFAULT 0,
  task_path VARCHAR(200) NOT NULL,
  args JSON NOT NULL,
  kwargs JSON NOT NULL,
  owner VARCHAR(128) NULL,
  lease_until DATETIME(6) NULL,
  attempts INT NOT NULL DEFAULT 0,
  started_at DATETIME(6) NULL,
  last_attempted_at DATETIME(6) NULL,
  finished_at DATETIME(6) NULL,
  worker_ids JSON NULL,
  KEY {MIN_TABLE}_claim (status, queue_name, priority_rank, id)
)"""
MIN_ROW = "('default', 'ready', 0, 'benchmarks.tasks.noop', '[]', '{}')"
MIN_INSERT = (
    f"INSERT INTO {MIN_TABLE} (queue_name, status, priority_rank, task_path, args, kwargs) VALUES "
)

OURS = SYSTEMS["ours"]
RAW = SYSTEMS["raw"]
RAW_MIN = replace(
    SYSTEMS["raw"],
    name="raw_min",
    label="raw SQL, minimal table",
    database=f"{DB_PREFIX}_min",
    remaining_sql=f"SELECT COUNT(*) FROM {MIN_TABLE} WHERE status IN ('ready', 'claimed')",
    tables=(MIN_TABLE,),
)
CELERY = SYSTEMS["celery"]


@dataclass(frozen=True)
class Shape:
    """Processes x threads; the claim batch of the raw loops; django-skipqueue's prefetch."""

    processes: int
    threads: int
    prefetch: str = "auto"
    batch: int | None = None

    @property
    def label(self) -> str:
        extra = "" if self.prefetch == "auto" else f" prefetch {self.prefetch}"
        return f"{self.processes}x{self.threads}{extra}"

    @property
    def raw_batch(self) -> int:
        return self.batch or self.threads


SHAPES = (
    Shape(1, 1),
    Shape(1, 1, "0"),
    Shape(4, 1),
    Shape(4, 1, "0"),
    Shape(4, 4),
    Shape(4, 4, "0"),
    Shape(2, 16),
    Shape(2, 16, "0"),
    Shape(4, 1, "50", batch=50),
)


def commands(system: System, shape: Shape) -> list[list[str]]:
    if system.name == "ours":
        return [
            system.django(
                "runworkers",
                "--processes", str(shape.processes),
                "--threads", str(shape.threads),
                "--prefetch", shape.prefetch,
            )
        ]  # fmt: skip
    if system.name.startswith("raw"):
        cmd = [OUR_PYTHON, "-m", "benchmarks.raw_worker", "--forever"]
        return [[*cmd, "--batch", str(shape.raw_batch)]] * shape.processes
    # Celery: prefork with the same concurrency, as in the table.
    return CELERY.worker_commands(shape.processes * shape.threads, 1)


def env(system: System, shape: Shape) -> dict[str, str]:
    extra = {"BENCH_WORKERS": str(shape.processes)}
    if system.name == "raw_min":
        extra["BENCH_RAW_TABLE"] = MIN_TABLE
    return system.env(**extra)


def systems_for(shape: Shape) -> list[System]:
    """Prefetch-off rows: ours alone (against the row above); batch rows: the minimal loop."""
    if shape.batch:
        return [OURS, RAW_MIN]
    return [OURS] if shape.prefetch == "0" else [OURS, RAW, RAW_MIN, CELERY]


def fill_min(count: int) -> float:
    """Multi-row INSERTs of 1,000 rows into the minimal table; return the seconds taken."""
    db = connect(RAW_MIN.database)
    cursor = db.cursor()
    began = time.perf_counter()
    for start in range(0, count, 1000):
        cursor.execute(MIN_INSERT + ",".join([MIN_ROW] * min(1000, count - start)))
    return time.perf_counter() - began


def fill_min_params(count: int) -> float:
    """A minimal queue's bulk enqueue from Python: one multi-row INSERT per 1,000 jobs, each
    job a row of parameters (its arguments encoded as JSON), sent with ``executemany`` (which
    writes the multi-row INSERT and quotes every value). Return the seconds taken.

    What a program pays to insert many distinct jobs into the minimal table; the literal rows
    of :func:`fill_min` are the same text repeated, so they measure the server alone.
    """
    calls: list[tuple[tuple, dict]] = [((), {})] * count
    db = connect(RAW_MIN.database)
    cursor = db.cursor()
    sql = MIN_INSERT + "(%s, %s, %s, %s, %s, %s)"
    began = time.perf_counter()
    rows = [
        ("default", "ready", 0, "benchmarks.tasks.noop", json.dumps(list(a)), json.dumps(kw))
        for a, kw in calls
    ]
    for start in range(0, count, 1000):
        cursor.executemany(sql, rows[start : start + 1000])
    return time.perf_counter() - began


def fill_ours_literal(count: int) -> float:
    """The same multi-row INSERTs into django-skipqueue's own table; return the seconds taken.

    The row is one that ``enqueue_many`` wrote (the table must hold one), its stored columns
    quoted once: no Python per row, so what is left is the wide row's and its indexes' cost
    to the server, the floor under any bulk enqueue into this table.
    """
    db = connect(OURS.database)
    cursor = db.cursor()
    columns = stored_columns(db, "skipqueue_job", with_id=False)
    cursor.execute(f"SELECT {columns} FROM skipqueue_job LIMIT 1")
    values = cursor.fetchone()
    if values is None:
        raise RuntimeError("skipqueue_job is empty: enqueue_many first")
    row = "(" + ", ".join(_literal(db, value) for value in values) + ")"
    cursor.execute("TRUNCATE TABLE skipqueue_job")
    insert = f"INSERT INTO skipqueue_job ({columns}) VALUES "
    began = time.perf_counter()
    for start in range(0, count, 1000):
        cursor.execute(insert + ",".join([row] * min(1000, count - start)))
    return time.perf_counter() - began


def _literal(db: object, value: object) -> str:
    quoted = db.literal(value)  # type: ignore[attr-defined]
    return quoted.decode() if isinstance(quoted, bytes) else str(quoted)


def setup_min() -> None:
    server = connect()
    server.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{RAW_MIN.database}`")
    connect(RAW_MIN.database).cursor().execute(MIN_DDL)


def fill(system: System, count: int) -> Backlog:
    backlog = Backlog(system)
    backlog.empty()
    if system.name == "raw_min":
        fill_min(count)
    elif system.name == "celery":
        agent(system, "enqueue", "single", str(count))
    else:
        agent(system, "enqueue", "bulk", str(count))
    backlog.snapshot()
    return backlog


def drain(system: System, backlog: Backlog, shape: Shape, count: int, cap: float) -> dict:
    backlog.restore()
    name = "redis-server" if system.name == "celery" else "mariadbd"
    log = WORK_DIR / "logs" / f"throughput-{system.name}-{shape.label.replace(' ', '_')}.log"
    fleet = Fleet.start(commands(system, shape), env(system, shape), log)
    try:
        return watch(backlog, fleet, partial(server_cpu_seconds, name, None), count, cap)
    finally:
        fleet.stop()


def enqueues(count: int, singles: int) -> dict[str, float]:
    """Jobs per second of bulk and single enqueues (each system's own way)."""
    Backlog(OURS).empty()
    ours_bulk = agent(OURS, "enqueue", "bulk", str(count))["seconds"]
    ours_table_bulk = fill_ours_literal(count)
    Backlog(RAW_MIN).empty()
    min_bulk = fill_min(count)
    Backlog(RAW_MIN).empty()
    min_params_bulk = fill_min_params(count)
    Backlog(OURS).empty()
    ours_single = agent(OURS, "enqueue", "single", str(singles))["seconds"]
    Backlog(CELERY).empty()
    celery_single = agent(CELERY, "enqueue", "single", str(singles))["seconds"]
    return {
        "ours_bulk": count / ours_bulk,
        "raw_min_bulk": count / min_bulk,
        "raw_min_params_bulk": count / min_params_bulk,
        "ours_table_bulk": count / ours_table_bulk,
        "ours_single": singles / ours_single,
        "celery_single": singles / celery_single,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=6000)
    parser.add_argument("--cap", type=float, default=8.0)
    parser.add_argument("--enqueue-jobs", type=int, default=20_000)
    parser.add_argument("--singles", type=int, default=1000)
    default_out = DOCS_DIR / "benchmarks" / "raw" / "throughput.json"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    agent(OURS, "setup")
    setup_min()
    backlogs = {system.name: fill(system, args.jobs) for system in (OURS, RAW, RAW_MIN, CELERY)}
    runs: dict[str, dict[str, list[dict]]] = {}
    plan = [(shape, system) for shape in SHAPES for system in systems_for(shape)]
    for rnd in range(args.rounds):
        order = plan if rnd % 2 == 0 else list(reversed(plan))
        for shape, system in order:
            result = drain(system, backlogs[system.name], shape, args.jobs, args.cap)
            result["loadavg"] = os.getloadavg()[0]
            runs.setdefault(shape.label, {}).setdefault(system.name, []).append(result)
            rate = result.get("jobs_per_s") or 0
            cpu = result.get("cpu_ms_per_job") or 0
            print(f"{time.strftime('%H:%M:%S')} round {rnd + 1} {shape.label} {system.name}: "
                  f"{rate:.0f} jobs/s, {cpu:.3f} ms CPU/job", flush=True)  # fmt: skip
    enqueue_runs = [enqueues(args.enqueue_jobs, args.singles) for _ in range(args.rounds)]
    result = {
        "started": started,
        "ended": {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()},
        "machine": machine(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "shapes": {s.label: {"raw_batch": s.raw_batch, "prefetch": s.prefetch} for s in SHAPES},
        "medians": _medians(runs),
        "enqueue": {k: statistics.median(r[k] for r in enqueue_runs) for k in enqueue_runs[0]},
        "runs": runs,
        "enqueue_runs": enqueue_runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps({"medians": result["medians"], "enqueue": result["enqueue"]}, indent=1))


def _medians(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict[str, float]]]:
    table: dict[str, dict[str, dict[str, float]]] = {}
    for shape, by_system in runs.items():
        for name, results in by_system.items():
            row = {}
            for key in ("jobs_per_s", "cpu_ms_per_job", "server_cpu_ms_per_job"):
                values = [r[key] for r in results if r.get(key) is not None]
                if values:
                    row[key] = statistics.median(values)
            table.setdefault(shape, {})[name] = row
    return table


if __name__ == "__main__":
    main()
