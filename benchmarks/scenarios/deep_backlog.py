"""Drain from a deep backlog (issue 23): the same drain with 1,000,000 jobs waiting and 20,000.

``python -m benchmarks deep_backlog [--rounds 3] [--deep 1000000] [--shallow 20000]
[--jobs 20000] [--shapes 4x4,1x1]`` fills django-skipqueue's table with ready no-op jobs (one
``INSERT ... SELECT`` from MariaDB's sequence engine, every row a copy of one that
``enqueue_many`` wrote), then lets ``runworkers`` (P x T, its defaults: claiming ahead on)
run ``--jobs`` of them, timed from the first finished job to the ``--jobs``-th. Each round
drains both backlogs in each shape, the deep one first in odd rounds and second in even ones,
each after the server has written back the fill's dirty pages.

The progress is counted as succeeded rows: the claim index leads with the status, so counting
the few thousand succeeded rows reads only those, where counting what is left of a million
ready ones would read up to a million index entries every 50 ms. The target: the deep drain
at least 0.9x the shallow one. Writes ``docs/benchmarks/raw/deep_backlog.json`` and prints the
medians; ``section()`` renders the report's section from it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.backlog import connect, stored_columns
from benchmarks.harness import DOCS_DIR, WORK_DIR, agent
from benchmarks.machine import machine
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.systems import DB_PREFIX, SYSTEMS

OURS = replace(SYSTEMS["ours"], database=f"{DB_PREFIX}_deep")
POLL = 0.05
START_TIMEOUT = 60.0
#: A drain that has not run ``--jobs`` jobs after this many seconds is measured as it stands.
CAP = 30.0


def fill(rows: int) -> float:
    """Replace the table's content with ``rows`` ready no-op jobs; return the seconds taken."""
    db = connect(OURS.database)
    cursor = db.cursor()
    cursor.execute("TRUNCATE TABLE skipqueue_job")
    agent(OURS, "enqueue", "bulk", "1")
    cursor.execute("SELECT MAX(id) FROM skipqueue_job")
    (template,) = cursor.fetchone()
    columns = stored_columns(db, "skipqueue_job", with_id=False)
    began = time.perf_counter()
    cursor.execute(
        f"INSERT INTO skipqueue_job ({columns}) SELECT {columns} FROM skipqueue_job "
        f"JOIN seq_1_to_{rows} WHERE id = %s",
        (template,),
    )
    cursor.execute("DELETE FROM skipqueue_job WHERE id = %s", (template,))
    seconds = time.perf_counter() - began
    db.close()
    return seconds


def settle() -> float:
    """Write the fill's dirty pages of the jobs table back to disk, so that no drain pays for
    the previous fill (``FLUSH TABLES ... FOR EXPORT`` does it for one table, under a read
    lock); return the seconds it took."""
    db = connect(OURS.database)
    cursor = db.cursor()
    began = time.monotonic()
    cursor.execute("FLUSH TABLES skipqueue_job FOR EXPORT")
    cursor.execute("UNLOCK TABLES")
    db.close()
    return time.monotonic() - began


def buffer_pool_mib() -> int:
    cursor = connect().cursor()
    cursor.execute("SELECT @@innodb_buffer_pool_size DIV 1048576")
    return int(cursor.fetchone()[0])


def drain(shape: str, jobs: int, backlog: int) -> dict:
    """Run ``runworkers`` in ``shape`` on the filled table until ``jobs`` jobs succeeded."""
    processes, threads = shape.split("x")
    command = OURS.django("runworkers", "--processes", processes, "--threads", threads)
    env = OURS.env(BENCH_WORKERS=processes)
    log = WORK_DIR / "logs" / f"deep-backlog-{shape}-{backlog}.log"
    db = connect(OURS.database)
    cursor = db.cursor()

    def succeeded() -> int:
        cursor.execute("SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded'")
        return int(cursor.fetchone()[0])

    fleet = Fleet.start([command], env, log)
    try:
        launched, first = time.monotonic(), None
        while True:
            done, now = succeeded(), time.monotonic()
            if first is None and done > 0:
                first = (now, done, fleet.cpu_seconds(), server_cpu_seconds("mariadbd"))
            if first is None and now - launched > START_TIMEOUT:
                raise RuntimeError(f"no job finished within {START_TIMEOUT} s: see {log}")
            if first is not None and (done >= jobs or now - first[0] > CAP):
                break
            if not fleet.alive():
                raise RuntimeError(f"the workers exited early: see {log}")
            time.sleep(POLL)
        cpu, server = fleet.cpu_seconds(), server_cpu_seconds("mariadbd")
    finally:
        fleet.stop()
        db.close()
    t0, done0, cpu0, server0 = first
    ran, seconds = done - done0, now - t0
    return {
        "backlog": backlog,
        "jobs": ran,
        "seconds": seconds,
        "jobs_per_s": ran / seconds,
        "cpu_ms_per_job": 1000 * (cpu - cpu0) / ran,
        "server_cpu_ms_per_job": 1000 * (server - server0) / ran,
        "capped": done < jobs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deep", type=int, default=1_000_000)
    parser.add_argument("--shallow", type=int, default=20_000)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--shapes", default="4x4,1x1")
    default_out = DOCS_DIR / "benchmarks" / "raw" / "deep_backlog.json"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    if args.jobs > args.shallow:
        parser.error("--jobs must not exceed --shallow: the shallow drain would run dry")
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    agent(OURS, "setup")
    runs: dict[str, dict[str, list[dict]]] = {}
    for rnd in range(args.rounds):
        sizes = [args.deep, args.shallow] if rnd % 2 == 0 else [args.shallow, args.deep]
        for shape in args.shapes.split(","):
            for size in sizes:
                filled = fill(size)
                settled = settle()
                result = drain(shape, args.jobs, size)
                result.update(fill_seconds=filled, settle_seconds=settled)
                result.update(loadavg=os.getloadavg()[0])
                key = "deep" if size == args.deep else "shallow"
                runs.setdefault(shape, {}).setdefault(key, []).append(result)
                print(
                    f"{time.strftime('%H:%M:%S')} round {rnd + 1} {shape} {size:,} waiting: "
                    f"{result['jobs_per_s']:.0f} jobs/s, {result['cpu_ms_per_job']:.3f} ms "
                    f"CPU/job (filled in {filled:.1f} s)",
                    flush=True,
                )
    medians = {
        shape: {
            key: {
                field: statistics.median(r[field] for r in results)
                for field in ("jobs_per_s", "cpu_ms_per_job", "server_cpu_ms_per_job")
            }
            for key, results in by_size.items()
        }
        for shape, by_size in runs.items()
    }
    result = {
        "started": started,
        "ended": {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()},
        "machine": machine(),
        "buffer_pool_mib": buffer_pool_mib(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "medians": medians,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps(medians, indent=1))


if __name__ == "__main__":
    main()
