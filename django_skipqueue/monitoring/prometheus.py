"""The database's figures as Prometheus gauges, read at scrape time.

The same queries as ``skipqueue_status`` and the dashboard, with their caps: depth per queue and
status (exact up to ``SKIPQUEUE_STATUS_COUNT_CAP``, the optimizer's estimate beyond), the oldest
ready job per queue, the oldest scheduled job that is due (one seek at the head of the due
index), live and stale workers, the server's history list and oldest transaction, and the
gauges of each installed app that plugs in (``Extension.metrics``). Counters of what workers did
are not here: the worker processes export them (``exporter.py``), since rows that the purge
deletes cannot be counted again.

Needs ``prometheus-client`` (the ``prometheus`` extra); imported only by the view.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.extensions import extensions
from django_skipqueue.models import Job
from django_skipqueue.monitoring.dbhealth import database_health
from django_skipqueue.monitoring.stats import DEPTH_STATUSES, StatusReport, queue_status


class DatabaseCollector(Collector):
    """Gauges of one database's queue, read when Prometheus scrapes."""

    def __init__(self, using: str, queues: Iterable[str]) -> None:
        self.using = using
        self.queues = list(queues)

    def collect(self) -> Iterator[Metric]:
        report = queue_status(self.using, self.queues, window_minutes=1)
        yield from _queue_gauges(report)
        yield gauge(
            "skipqueue_oldest_due_scheduled_age_seconds",
            "Seconds since the oldest scheduled job became due without being made ready "
            "(0: none is due).",
            [((), oldest_due_age(self.using))],
        )
        workers = report.workers
        yield gauge(
            "skipqueue_workers",
            "Running worker processes by heartbeat: live, or stale (no heartbeat within "
            "SKIPQUEUE_WORKER_STALE_SECONDS).",
            [(("live",), workers.live), (("stale",), workers.stale)],
            ["state"],
        )
        yield from _server_gauges(self.using)
        for extension in extensions():  # the gauges of the installed apps that plug in
            yield from extension.metrics(self.using)


def registry_for(using: str, queues: Iterable[str]) -> CollectorRegistry:
    """A registry of its own (not the global one) holding the database gauges."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(using, queues))
    return registry


def gauge(
    name: str,
    documentation: str,
    samples: list[tuple[tuple[str, ...], float]],
    labels: list[str] | None = None,
) -> GaugeMetricFamily:
    """One gauge family from ``(label values, value)`` samples (apps' hooks build theirs here)."""
    family = GaugeMetricFamily(name, documentation, labels=labels or [])
    for values, value in samples:
        family.add_metric(list(values), value)
    return family


def _queue_gauges(report: StatusReport) -> Iterator[Metric]:
    yield gauge(
        "skipqueue_jobs",
        "Jobs per queue and status (exact up to SKIPQUEUE_STATUS_COUNT_CAP, estimated beyond).",
        [
            ((queue.name, status), queue.counts[status].value)
            for queue in report.queues
            for status in DEPTH_STATUSES
        ],
        ["queue", "status"],
    )
    yield gauge(
        "skipqueue_oldest_ready_age_seconds",
        "Seconds the longest-waiting ready job of the queue has waited (0: none ready).",
        [((queue.name,), queue.oldest_ready_age or 0.0) for queue in report.queues],
        ["queue"],
    )
    yield gauge(
        "skipqueue_queue_paused",
        "1 while the queue is paused.",
        [((queue.name,), float(queue.paused)) for queue in report.queues],
        ["queue"],
    )


def oldest_due_age(using: str) -> float:
    """Seconds since the oldest due scheduled job's ``run_after``: the head of the due index."""
    now = read_db_now(using)
    first = (
        Job.objects.using(using)
        .scheduled()
        .filter(run_after__lte=now)
        .order_by("run_after", "id")
        .values_list("run_after", flat=True)
        .first()
    )
    return 0.0 if first is None else max(0.0, (now - first).total_seconds())


def _server_gauges(using: str) -> Iterator[Metric]:
    """The server's purge backlog and oldest transaction; absent where it hides them."""
    health = database_health(using)
    if health.history_length is not None:
        yield gauge(
            "skipqueue_database_history_list_length",
            "InnoDB history list length: undo logs of committed transactions not purged yet.",
            [((), health.history_length)],
        )
    if health.oldest_transaction_age is not None:
        yield gauge(
            "skipqueue_database_oldest_transaction_age_seconds",
            "Seconds the oldest open transaction of another session has been open (0: none).",
            [((), health.oldest_transaction_age)],
        )
