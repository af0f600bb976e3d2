"""Agent operations that only django-skipqueue has: history fill, claim cost, worker figures.

Run inside our interpreter after ``django.setup()`` (see agent.py).
"""

from __future__ import annotations

import statistics
import time

from django.db import connection

HANDLER_READS = (
    "Handler_read_first",
    "Handler_read_key",
    "Handler_read_last",
    "Handler_read_next",
    "Handler_read_prev",
    "Handler_read_rnd",
    "Handler_read_rnd_next",
)

COLUMNS = (
    "queue_name, priority, status, task_path, args, kwargs, owner, attempts, max_attempts, "
    "lease_seconds, cancel_requested, enqueued_at, started_at, finished_at, errors, worker_ids"
)


def add_rows(count: int, status: str, seconds_ago: int) -> None:
    """Insert ``count`` rows of ``status`` (finished ones ``seconds_ago``) in 100k chunks."""
    finished = (
        "NULL" if status in ("ready",) else f"UTC_TIMESTAMP(6) - INTERVAL {seconds_ago} SECOND"
    )
    owner = "NULL" if status == "ready" else "'old-worker'"
    while count > 0:
        chunk = min(count, 100_000)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO skipqueue_job ({COLUMNS}) SELECT 'default', 0, %s, "
                f"'benchmarks.tasks.noop', '[]', '{{}}', {owner}, 1, 1, 60, FALSE, "
                f"UTC_TIMESTAMP(6), {finished}, {finished}, '[]', '[]' FROM seq_1_to_{chunk}",
                [status],
            )
        count -= chunk
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE skipqueue_job")
        cursor.fetchall()


def history(count: str, seconds_ago: str = "86400") -> dict[str, object]:
    """Add ``count`` succeeded rows, finished ``seconds_ago`` (a day by default)."""
    began = time.perf_counter()
    add_rows(int(count), "succeeded", int(seconds_ago))
    return {"seconds": time.perf_counter() - began}


def ready(count: str) -> dict[str, object]:
    add_rows(int(count), "ready", 0)
    return {"ok": True}


def _handler_reads() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
        return sum(int(value) for name, value in cursor.fetchall() if name in HANDLER_READS)


def claimcost(claims: str, limit: str) -> dict[str, object]:
    """Time ``claims`` claims of ``limit`` jobs and count the index records each one reads.

    Each claim is the whole of ``Job.objects.claim()``: the locking read, the UPDATE and the
    payload read. Records read are MariaDB's Handler_read_* deltas of this session, less
    the reads of SHOW STATUS itself.
    """
    from django_skipqueue.models import Job

    manager = Job.objects
    manager.claim(["default"], limit=int(limit), owner="bench-warm")  # compile, warm caches
    overhead = -_handler_reads() + _handler_reads()
    times, reads = [], []
    for index in range(int(claims)):
        before = _handler_reads()
        began = time.perf_counter()
        got = manager.claim(["default"], limit=int(limit), owner=f"bench-{index}")
        times.append(1000 * (time.perf_counter() - began))
        reads.append(_handler_reads() - before - overhead)
        if len(got) < int(limit):
            return {"error": f"queue ran dry after {index} claims"}
    return {
        "claim_ms_median": statistics.median(times),
        "claim_ms_p95": sorted(times)[int(0.95 * (len(times) - 1))],
        "records_per_claim": statistics.median(reads),
    }


def workers() -> dict[str, object]:
    """Claim-latency percentiles the worker processes wrote to the workers table."""
    from django_skipqueue.models import WorkerProcess

    rows = list(
        WorkerProcess.objects.filter(role="worker").values_list("claim_p50_ms", "claim_p95_ms")
    )
    p50 = [row[0] for row in rows if row[0] is not None]
    p95 = [row[1] for row in rows if row[1] is not None]
    return {
        "claim_p50_ms": statistics.median(p50) if p50 else None,
        "claim_p95_ms": max(p95) if p95 else None,
    }
