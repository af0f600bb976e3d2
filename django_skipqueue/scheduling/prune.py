"""Delete old tick rows, so that a schedule firing every second does not grow a table forever.

A tick row guards its tick against a second enqueue only while a scheduler could still find
that tick due, which is never once the schedule's next tick has passed it; the rows are kept
longer (SKIPQUEUE_SCHEDULER_TICK_RETENTION) as the history the admin lists.
"""

from __future__ import annotations

from datetime import timedelta

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.scheduling.models import Schedule, Tick

#: Tick rows deleted per statement.
BATCH = 1000


def prune_ticks(using: str) -> int:
    """Delete ticks older than the retention, schedule by schedule; return how many."""
    retention = timedelta(seconds=get_settings().SCHEDULER_TICK_RETENTION)
    cutoff = read_db_now(using) - retention
    deleted = 0
    for schedule_id in Schedule.objects.using(using).values_list("pk", flat=True):
        # (schedule, tick_at) is the unique index: each statement reads one schedule's range.
        old = Tick.objects.using(using).filter(schedule_id=schedule_id, tick_at__lt=cutoff)
        while ids := list(old.order_by("tick_at").values_list("pk", flat=True)[:BATCH]):
            deleted += Tick.objects.using(using).filter(pk__in=ids).delete()[0]
    return deleted
