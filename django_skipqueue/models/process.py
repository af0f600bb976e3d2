"""What every long-running process records of itself, and when its heartbeat says it lives.

Workers and supervisors (``WorkerProcess``) and outbox relays (``OutboxRelay``) each keep a
table of their own (their counters differ, and no data moves), on this one abstract base: the
same host, pid, wake-up address and heartbeat columns, and one reading of them. A process is
*stopped* once it wrote ``stopped_at``; otherwise *live* while its last heartbeat is within
SKIPQUEUE_WORKER_STALE_SECONDS, *stale* after that, and *gone* (killed, its machine lost: its
row kept for history, out of the live and stale counts) after GONE_FACTOR times as long. Wake-up
datagrams go only to processes that beat within LIVE_HEARTBEATS heartbeat intervals: a shorter
horizon, since a datagram to a dead process is lost while a stale one may still be counted.
All times are the database's clock.
"""

from __future__ import annotations

from typing import Any, Self

from django.db import models
from django.db.models import Case, CharField, Value, When

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNowPlus

#: A process silent for this many times SKIPQUEUE_WORKER_STALE_SECONDS is gone.
GONE_FACTOR = 10
#: A process whose heartbeat is older than this many heartbeat intervals gets no datagram.
LIVE_HEARTBEATS = 3


class ProcessQuerySet(models.QuerySet[Any]):
    """Process rows by their heartbeat: running, live, stale, answering, with their state."""

    def running(self) -> Self:
        """Processes that have not said they stopped (live, stale or gone)."""
        return self.filter(stopped_at__isnull=True)

    def live(self) -> Self:
        """Running processes that beat within SKIPQUEUE_WORKER_STALE_SECONDS."""
        return self.running().filter(last_heartbeat_at__gte=_ago(1))

    def stale(self) -> Self:
        """Running processes silent for longer than that, but not yet gone."""
        return self.running().filter(last_heartbeat_at__lt=_ago(1), last_heartbeat_at__gte=_ago())

    def answering(self) -> Self:
        """Running processes that listen for wake-ups and beat lately enough to hear one."""
        horizon = DatabaseNowPlus(-LIVE_HEARTBEATS * get_settings().HEARTBEAT_SECONDS)
        return self.running().filter(wakeup_address__isnull=False, last_heartbeat_at__gte=horizon)

    def with_state(self) -> Self:
        """Annotate each row with ``state``: stopped, live, stale or gone."""
        return self.annotate(
            state=Case(
                When(stopped_at__isnull=False, then=Value("stopped")),
                When(last_heartbeat_at__gte=_ago(1), then=Value("live")),
                When(last_heartbeat_at__gte=_ago(), then=Value("stale")),
                default=Value("gone"),
                output_field=CharField(),
            )
        )


def _ago(factor: float = GONE_FACTOR) -> DatabaseNowPlus:
    """The database time ``factor`` times SKIPQUEUE_WORKER_STALE_SECONDS ago."""
    return DatabaseNowPlus(-get_settings().WORKER_STALE_SECONDS * factor)


class ProcessRecord(models.Model):
    """One row per process start: where it runs, how to wake it, its heartbeat."""

    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    # host:port of the UDP socket that wakes the process, when it listens.
    wakeup_address = models.CharField(max_length=64, null=True, blank=True)
    started_at = models.DateTimeField()
    last_heartbeat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)

    objects = ProcessQuerySet.as_manager()

    class Meta:
        abstract = True
