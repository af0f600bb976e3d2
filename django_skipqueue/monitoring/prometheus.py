"""The database's figures as Prometheus gauges, read at scrape time.

The same queries as ``skipqueue_status`` and the dashboard, with their caps: depth per queue and
status (exact up to ``SKIPQUEUE_STATUS_COUNT_CAP``, the optimizer's estimate beyond), the oldest
ready job per queue, the oldest scheduled job that is due (one seek at the head of the due
index), live and stale workers, the server's history list and oldest transaction, and the
outbox and reservation figures where those apps are installed. Counters of what workers did
are not here: the worker processes export them (``exporter.py``), since rows that the purge
deletes cannot be counted again.

Needs ``prometheus-client`` (the ``prometheus`` extra); imported only by the view.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.apps import apps
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
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
        yield _gauge(
            "skipqueue_oldest_due_scheduled_age_seconds",
            "Seconds since the oldest scheduled job became due without being made ready "
            "(0: none is due).",
            [((), oldest_due_age(self.using))],
        )
        workers = report.workers
        yield _gauge(
            "skipqueue_workers",
            "Running worker processes by heartbeat: live, or stale (no heartbeat within "
            "SKIPQUEUE_WORKER_STALE_SECONDS).",
            [(("live",), workers.live), (("stale",), workers.stale)],
            ["state"],
        )
        yield from _server_gauges(self.using)
        yield from _outbox_gauges(self.using)
        yield from _reservation_gauges()


def registry_for(using: str, queues: Iterable[str]) -> CollectorRegistry:
    """A registry of its own (not the global one) holding the database gauges."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(using, queues))
    return registry


def _gauge(
    name: str,
    documentation: str,
    samples: list[tuple[tuple[str, ...], float]],
    labels: list[str] | None = None,
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels or [])
    for values, value in samples:
        family.add_metric(list(values), value)
    return family


def _queue_gauges(report: StatusReport) -> Iterator[Metric]:
    yield _gauge(
        "skipqueue_jobs",
        "Jobs per queue and status (exact up to SKIPQUEUE_STATUS_COUNT_CAP, estimated beyond).",
        [
            ((queue.name, status), queue.counts[status].value)
            for queue in report.queues
            for status in DEPTH_STATUSES
        ],
        ["queue", "status"],
    )
    yield _gauge(
        "skipqueue_oldest_ready_age_seconds",
        "Seconds the longest-waiting ready job of the queue has waited (0: none ready).",
        [((queue.name,), queue.oldest_ready_age or 0.0) for queue in report.queues],
        ["queue"],
    )
    yield _gauge(
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
        yield _gauge(
            "skipqueue_database_history_list_length",
            "InnoDB history list length: undo logs of committed transactions not purged yet.",
            [((), health.history_length)],
        )
    if health.oldest_transaction_age is not None:
        yield _gauge(
            "skipqueue_database_oldest_transaction_age_seconds",
            "Seconds the oldest open transaction of another session has been open (0: none).",
            [((), health.oldest_transaction_age)],
        )


def _outbox_gauges(using: str) -> Iterator[Metric]:
    from django_skipqueue.outbox.stats import outbox_status  # the outbox app is optional

    status = outbox_status(using)
    if status is None:
        return
    yield _gauge(
        "skipqueue_outbox_messages",
        "Outbox messages per status (pending, retry, dead).",
        [(("pending",), status.pending), (("retry",), status.retry), (("dead",), status.dead)],
        ["status"],
    )
    yield _gauge(
        "skipqueue_outbox_oldest_unsent_age_seconds",
        "Seconds the oldest unsent outbox message has waited (0: none waits).",
        [((), status.oldest_unsent_age or 0.0)],
    )


def _reservation_gauges() -> Iterator[Metric]:
    if not apps.is_installed("django_skipqueue.reservations"):
        return
    from django_skipqueue.reservations.models import HoldState, Reservation, Unit

    settings = get_settings()
    using, cap = settings.RESERVATION_DATABASE, settings.STATUS_COUNT_CAP
    units: Any = Unit.objects.using(using)
    free = units.filter(reserved_by__isnull=True).values("unit_seq")[: cap + 1].count()
    # A live hold marks exactly its quantity of units, in the same transaction: its rows are
    # read on the sweep's index (state, expires_at). Units have no index on reserved_by, and
    # counting the held ones would read every unit when few are held.
    holds = Reservation.objects.using(using).filter(state=HoldState.HELD)
    held = sum(holds.order_by().values_list("quantity", flat=True)[: cap + 1])
    yield _gauge(
        "skipqueue_reservation_units",
        "Units in every reservation pool: free (counted up to SKIPQUEUE_STATUS_COUNT_CAP + 1), "
        "or held (by up to SKIPQUEUE_STATUS_COUNT_CAP + 1 live holds).",
        [(("free",), free), (("held",), held)],
        ["state"],
    )
