"""Prune the bookkeeping tables: old per-minute counters and rows of long-gone workers.

Both tables grow by a few rows per worker per minute; nothing reads rows older than an hour
(status, health and the dashboard), so a day's worth is plenty. Deletes go in small batches
so that no transaction is long, as for the jobs table.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import QuerySet

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import QueueMinute, WorkerProcess

#: Rows deleted per transaction.
PRUNE_BATCH = 1000


def prune_metrics(using: str = "default") -> int:
    """Delete counters and worker rows older than SKIPQUEUE_METRICS_RETENTION_SECONDS."""
    cutoff = read_db_now(using) - timedelta(seconds=get_settings().METRICS_RETENTION_SECONDS)
    minutes = QueueMinute.objects.using(using).filter(minute__lt=cutoff)
    # A worker row goes once its process stopped beating (exited or died) before the cutoff.
    workers = WorkerProcess.objects.using(using).filter(last_heartbeat_at__lt=cutoff)
    return _delete_in_batches(minutes) + _delete_in_batches(workers)


def _delete_in_batches(rows: QuerySet) -> int:
    deleted = 0
    while ids := list(rows.order_by("pk").values_list("pk", flat=True)[:PRUNE_BATCH]):
        deleted += rows.model._default_manager.using(rows.db).filter(pk__in=ids).delete()[0]
        if len(ids) < PRUNE_BATCH:
            break
    return deleted
