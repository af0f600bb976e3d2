"""The raw SQL reference: the claim-batch / complete-batch cycle with mysqlclient and nothing else.

Same table, same index and the same statements as django-skipqueue's claim (keys only under
FOR UPDATE SKIP LOCKED, mark claimed with a lease, commit, read payloads by key), then one
fenced UPDATE that completes the whole batch. ``BENCH_RAW_TABLE`` names another table with the
same columns: ``raw_min_job`` (scenarios/throughput) has no index but its primary key and
the claim index, so the wide table's own cost shows. No ORM, no signals, no heartbeat, no logging:
what this machine allows, and the yardstick for the framework's overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
import uuid
from collections.abc import Callable

import MySQLdb

from benchmarks.jobs import noop_function, probe_function

FUNCTIONS: dict[str, Callable[..., None]] = {
    "benchmarks.tasks.noop": noop_function,
    "benchmarks.tasks.probe": probe_function,
}

TABLE = os.environ.get("BENCH_RAW_TABLE", "skipqueue_job")
LOCK = (
    f"SELECT id FROM {TABLE} WHERE status = 'ready' AND queue_name = 'default' "
    "ORDER BY priority_rank, id LIMIT %s FOR UPDATE SKIP LOCKED"
)
MARK = (
    f"UPDATE {TABLE} SET status = 'claimed', owner = %s, "
    "lease_until = UTC_TIMESTAMP(6) + INTERVAL 60 SECOND, attempts = attempts + 1, "
    "started_at = COALESCE(started_at, UTC_TIMESTAMP(6)), last_attempted_at = UTC_TIMESTAMP(6) "
    "WHERE id IN ({})"
)
FETCH = f"SELECT id, task_path, args, kwargs FROM {TABLE} WHERE id IN ({{}})"
DONE = (
    f"UPDATE {TABLE} SET status = 'succeeded', finished_at = UTC_TIMESTAMP(6), "
    "lease_until = NULL, worker_ids = JSON_ARRAY(owner) "
    "WHERE owner = %s AND status = 'claimed' AND id IN ({})"
)


def connect() -> MySQLdb.Connection:
    conn = MySQLdb.connect(
        host=os.environ.get("BENCH_DB_HOST", "127.0.0.1"),
        port=int(os.environ.get("BENCH_DB_PORT", "3306")),
        user="root",
        database=os.environ.get("BENCH_DB", "sq_bench"),
        autocommit=True,
        charset="utf8mb4",
    )
    conn.cursor().execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    return conn


def claim(cursor: MySQLdb.cursors.Cursor, owner: str, batch: int) -> list[int]:
    cursor.execute("BEGIN")
    cursor.execute(LOCK, (batch,))
    ids = [row[0] for row in cursor.fetchall()]
    if ids:
        cursor.execute(MARK.format(",".join(map(str, ids))), (owner,))
    cursor.execute("COMMIT")
    return ids


def run_batch(cursor: MySQLdb.cursors.Cursor, ids: list[int]) -> None:
    """Read the claimed payloads by key (after the claim committed) and run each job."""
    cursor.execute(FETCH.format(",".join(map(str, ids))))
    for _pk, path, args, kwargs in cursor.fetchall():
        FUNCTIONS[path](*json.loads(args), **json.loads(kwargs))


def run(batch: int, burst: bool, idle_sleep: float) -> int:
    owner = f"raw:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    cursor = connect().cursor()
    done = 0
    while True:
        ids = claim(cursor, owner, batch)
        if not ids:
            if burst:
                return done
            time.sleep(idle_sleep)
            continue
        run_batch(cursor, ids)
        cursor.execute(DONE.format(",".join(map(str, ids))), (owner,))
        done += len(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--batch", type=int, default=1, help="jobs per claim (default: %(default)r)"
    )
    parser.add_argument("--forever", action="store_true", help="keep polling when empty")
    parser.add_argument("--idle-sleep", type=float, default=0.05)
    args = parser.parse_args()
    run(args.batch, not args.forever, args.idle_sleep)


if __name__ == "__main__":
    main()
