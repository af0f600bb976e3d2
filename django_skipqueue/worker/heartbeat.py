"""The workers table and the heartbeat: lease renewal, liveness, counters, per-minute rows.

Also what a process measures of itself for them: its clock offset and its memory.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.db.models import Sum

from django_skipqueue.db.clock import DatabaseNow, read_db_now
from django_skipqueue.models import QueueMinute, WorkerProcess
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.worker.options import WorkerOptions

#: Counters that the workers table has (claim_queries lives in QueueMinute only).
ROW_COUNTERS = ("claimed", "succeeded", "failed", "retried", "reclaimed", "lost_leases")


def register(
    owner: str,
    role: str,
    options: WorkerOptions,
    *,
    supervisor: str | None = None,
    wakeup_address: str | None = None,
) -> None:
    """Insert this process's row in the workers table (database clock)."""
    WorkerProcess.objects.using(options.database).create(
        owner=owner,
        role=role,
        supervisor=supervisor,
        hostname=socket.gethostname()[:255],
        pid=os.getpid(),
        backend_alias=options.backend,
        queues=list(options.queues),
        threads=options.threads,
        wakeup_address=wakeup_address,
        started_at=DatabaseNow(),
        last_heartbeat_at=DatabaseNow(),
    )


def beat(owner: str, using: str, metrics: Metrics) -> bool:
    """Write liveness, counters and claim latency; return False if the row is gone."""
    p50, p95 = metrics.claim_percentiles()
    counters = {name: metrics.totals[name] for name in ROW_COUNTERS}
    updated = (
        WorkerProcess.objects.using(using)
        .filter(owner=owner)
        .update(last_heartbeat_at=DatabaseNow(), claim_p50_ms=p50, claim_p95_ms=p95, **counters)
    )
    write_minutes(owner, using, metrics)
    return updated == 1


def write_minutes(owner: str, using: str, metrics: Metrics) -> None:
    """Write the per-queue, per-minute rows that changed (absolute values: idempotent)."""
    for minute, queue_name, row in metrics.dirty_rows():
        values = {**row.counts, "claim_latency_histogram": list(row.histogram)}
        rows = QueueMinute.objects.using(using).filter(
            minute=minute, queue_name=queue_name, owner=owner
        )
        if not rows.update(**values):
            QueueMinute.objects.using(using).create(
                minute=minute, queue_name=queue_name, owner=owner, **values
            )
        row.dirty = False
    metrics.forget_old_minutes()


def mark_stopped(owner: str, using: str) -> None:
    WorkerProcess.objects.using(using).filter(owner=owner, stopped_at__isnull=True).update(
        stopped_at=DatabaseNow()
    )


def clock_offset(using: str) -> timedelta:
    """Return how far the database clock is ahead of this host's clock."""
    return read_db_now(using) - datetime.now(UTC)


def worker_totals(supervisor_owner: str, using: str) -> dict[str, int]:
    """Sum the counters of the worker processes one supervisor ran."""
    rows = WorkerProcess.objects.using(using).filter(supervisor=supervisor_owner)
    sums = rows.aggregate(**{name: Sum(name) for name in ROW_COUNTERS})
    return {name: int(sums[name] or 0) for name in ROW_COUNTERS}


def resident_megabytes() -> float | None:
    """Return this process's resident memory in MiB (Linux), or None where unknown."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * _PAGE_SIZE / 2**20


try:
    import resource

    _PAGE_SIZE = resource.getpagesize()
except ImportError:  # pragma: no cover - not POSIX
    _PAGE_SIZE = 4096
