"""Fire one locked schedule: enqueue its due ticks and record them, in the caller's transaction.

The caller holds the schedule's row lock (``lock_due``) inside one transaction: the jobs, the
tick rows and the schedule's new ``next_tick_at`` commit together or not at all. A scheduler
killed halfway leaves nothing behind; the next one finds the same ticks due and fires them.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.scheduling.definition import FIELDS, Definition, scheduled_task, validate
from django_skipqueue.scheduling.models import Missed, Schedule, Tick, TickKind

logger = logging.getLogger("django_skipqueue.scheduler")


def definition_of(schedule: Schedule) -> Definition:
    """The schedule's definition, checked (InvalidSchedule if its task or rule went bad)."""
    return validate(schedule.name, {name: getattr(schedule, name) for name in FIELDS})


def fire(schedule: Schedule, now: datetime, using: str, scheduler: str) -> int:
    """Enqueue the ticks of ``schedule`` due at ``now`` by its missed-tick policy; return them.

    A schedule that cannot be enqueued (its task was removed, its rule no longer parses) is
    moved to its next tick with the error recorded, so that it never blocks the others.
    """
    try:
        definition = definition_of(schedule)
        assert schedule.next_tick_at is not None  # lock_due() selects due schedules only
        times, due = _times(definition, schedule.next_tick_at, now)
        with transaction.atomic(using=using):
            fired = _enqueue(schedule, definition, times, using, scheduler)
    except DatabaseError:
        raise
    except Exception as error:  # the task's import or arguments: the user's code
        logger.exception(
            "schedule=%s could not be enqueued; skipped to its next tick", schedule.name
        )
        return _advance(schedule, now, using, error=f"{type(error).__name__}: {error}")
    schedule.missed_ticks += due - len(fired)
    if fired:
        schedule.last_tick_at, schedule.last_job_id = fired[-1]
    _advance(schedule, now, using, definition=definition)
    if due > len(fired):
        logger.warning(
            "schedule=%s missed=%d policy=%s", schedule.name, due - len(fired), definition.missed
        )
    return len(fired)


def run_now(schedule: Schedule, now: datetime, using: str, scheduler: str) -> int:
    """Enqueue one job of ``schedule`` at once (the admin's "Run now"); return its job id."""
    task = scheduled_task(definition_of(schedule))
    result = task.enqueue(*schedule.args, **schedule.kwargs)
    Tick.objects.using(using).create(
        schedule=schedule,
        tick_at=now,
        kind=TickKind.MANUAL,
        job_id=int(result.id),
        enqueued_at=DatabaseNow(),
        scheduler=scheduler,
    )
    Schedule.objects.using(using).filter(pk=schedule.pk).update(last_job_id=int(result.id))
    return int(result.id)


def _times(definition: Definition, start: datetime, now: datetime) -> tuple[list[datetime], int]:
    """The due tick times to enqueue under the policy, and how many ticks were due."""
    keep = definition.catch_up if definition.missed == Missed.CATCH_UP else 1
    times, due = definition.timing.due(start, now, keep)
    if definition.missed == Missed.SKIP:
        grace = timedelta(seconds=get_settings().SCHEDULER_GRACE)
        times = [moment for moment in times if now - moment <= grace]
    return times, due


def _enqueue(
    schedule: Schedule, definition: Definition, times: list[datetime], using: str, scheduler: str
) -> list[tuple[datetime, int]]:
    """Enqueue a job per tick not recorded yet and record each tick next to its job."""
    ticks = Tick.objects.using(using).filter(schedule=schedule)
    done = set(ticks.filter(tick_at__in=times).values_list("tick_at", flat=True))
    task = scheduled_task(definition)
    fired = []
    for moment in times:
        if moment in done:  # an edit moved next_tick_at back over recorded ticks
            continue
        job_id = int(task.enqueue(*definition.args, **definition.kwargs).id)
        ticks.create(
            schedule=schedule,
            tick_at=moment,
            job_id=job_id,
            enqueued_at=DatabaseNow(),
            scheduler=scheduler,
        )
        fired.append((moment, job_id))
    return fired


def _advance(
    schedule: Schedule,
    now: datetime,
    using: str,
    *,
    definition: Definition | None = None,
    error: str = "",
) -> int:
    """Move the schedule to its first tick after ``now``; an unreadable rule waits a minute."""
    if definition is not None:
        schedule.next_tick_at = definition.timing.after(now)
    else:
        schedule.next_tick_at = now + timedelta(minutes=1)
    schedule.last_error = error
    schedule.save(
        using=using,
        update_fields=[
            "next_tick_at",
            "last_tick_at",
            "last_job_id",
            "missed_ticks",
            "last_error",
        ],
    )
    return 0
