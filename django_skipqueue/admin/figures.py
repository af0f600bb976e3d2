"""What the dashboard shows, gathered from the same sources as ``skipqueue_status``.

Queue depth, oldest ready age, throughput, claim latency, reclaims and worker counts come
from ``stats.queue_status()`` itself, so the page and the command never disagree. Two more
reads feed what only the page draws: the per-minute throughput of the last hour (the
``QueueMinute`` rows the workers write, summed by minute) and the worker processes table
(newest heartbeat first, through its heartbeat index). Neither touches the jobs table. The
server's history list length and oldest transaction come from ``monitoring.dbhealth``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Sum

from django_skipqueue.admin.scope import QueueRef, admin_database, configured_queues
from django_skipqueue.conf import get_settings
from django_skipqueue.models import QueueMinute, QueuePause, WorkerProcess
from django_skipqueue.monitoring.dbhealth import DatabaseHealth, database_health
from django_skipqueue.monitoring.stats import StatusReport, queue_status

#: Minutes the throughput chart covers.
CHART_MINUTES = 60
#: Minutes the per-queue rates and latency percentiles cover (as skipqueue_status's default).
WINDOW_MINUTES = 5
#: Worker processes listed, newest heartbeat first.
WORKERS_SHOWN = 50


@dataclass
class MinutePoint:
    minute: datetime
    succeeded: int = 0
    failed: int = 0


@dataclass
class WorkerRow:
    process: WorkerProcess
    heartbeat_age: float
    stale: bool


@dataclass
class Dashboard:
    report: StatusReport
    #: Queue name -> one point per minute of the last hour, oldest first (zeros included).
    throughput: dict[str, list[MinutePoint]]
    workers: list[WorkerRow]
    #: Queue name -> (backend alias, name) for the pause API; only configured queues.
    refs: dict[str, QueueRef]
    pauses: dict[str, QueuePause] = field(default_factory=dict)
    #: The server's purge backlog and oldest open transaction.
    database: DatabaseHealth | None = None


def gather() -> Dashboard:
    """Read every figure of the dashboard (a handful of indexed queries)."""
    using = admin_database()
    refs = {ref.name: ref for ref in configured_queues()}
    report = queue_status(using, list(refs), window_minutes=WINDOW_MINUTES)
    names = [queue.name for queue in report.queues]
    return Dashboard(
        report=report,
        throughput=throughput(using, names, report.generated_at),
        workers=workers(using, report.generated_at),
        refs=refs,
        pauses={p.queue_name: p for p in QueuePause.objects.using(using)},
        database=database_health(using),
    )


def throughput(using: str, names: list[str], now: datetime) -> dict[str, list[MinutePoint]]:
    """Succeeded and failed jobs per minute over the last hour, per queue."""
    current = now.replace(second=0, microsecond=0)
    minutes = [current - timedelta(minutes=n) for n in range(CHART_MINUTES - 1, -1, -1)]
    rows = (
        QueueMinute.objects.using(using)
        .filter(minute__gte=minutes[0], queue_name__in=names)
        .values("queue_name", "minute")
        .annotate(succeeded=Sum("succeeded"), failed=Sum("failed"))
        .order_by()
    )
    found: dict[tuple[str, datetime], dict[str, int]] = defaultdict(dict)
    for row in rows:
        found[row["queue_name"], row["minute"]] = {
            "succeeded": row["succeeded"] or 0,
            "failed": row["failed"] or 0,
        }
    return {
        name: [
            MinutePoint(m, found[name, m].get("succeeded", 0), found[name, m].get("failed", 0))
            for m in minutes
        ]
        for name in names
    }


def workers(using: str, now: datetime) -> list[WorkerRow]:
    """The running processes with the newest heartbeats, each marked live or stale."""
    stale_after = get_settings().WORKER_STALE_SECONDS
    running = (
        WorkerProcess.objects.using(using)
        .filter(stopped_at__isnull=True)
        .order_by("-last_heartbeat_at")[:WORKERS_SHOWN]
    )
    rows = []
    for process in running:
        age = max(0.0, (now - process.last_heartbeat_at).total_seconds())
        rows.append(WorkerRow(process, age, age > stale_after))
    return rows
