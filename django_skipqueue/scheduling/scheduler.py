"""The scheduler: fire due schedules, one locked schedule per short transaction.

Every ``runworkers`` supervisor runs one in its maintenance loop, and ``skipqueue_scheduler``
runs one alone; any number can run at once. A schedule is fired only while its row is locked
(``SKIP LOCKED``: another scheduler takes the next schedule instead of waiting), and "now" is
the database's clock, read inside that transaction: a host whose clock is hours off computes
the same ticks as the others.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, IntegrityError, transaction

from django_skipqueue.db.clock import DatabaseNow, read_db_now
from django_skipqueue.db.statements import retry_whole_transaction
from django_skipqueue.maintenance.reap import runner_id
from django_skipqueue.scheduling.declared import sync_declared
from django_skipqueue.scheduling.models import Schedule
from django_skipqueue.scheduling.ticks import definition_of, fire

logger = logging.getLogger("django_skipqueue.scheduler")

#: Schedules fired per turn at most, so that one turn never holds up the rest of the loop long.
SCHEDULES_PER_TURN = 100


class Scheduler:
    """Fire the due schedules of one database; ``run_due()`` is one turn."""

    def __init__(self, using: str, *, runner: str | None = None) -> None:
        self.using = using
        self.runner = runner or runner_id("scheduler")
        self.synced = False

    def run_due(self) -> int:
        """Fire every due schedule once; return the ticks enqueued."""
        if not self.synced:
            self.sync()
        self.start_new()
        fired = 0
        for _ in range(SCHEDULES_PER_TURN):
            outcome = retry_whole_transaction(self.using, self._fire_one)
            if outcome is None:
                break
            fired += outcome
        return fired

    def sync(self) -> None:
        """Copy SKIPQUEUE_SCHEDULES into the table, once per process.

        A mistake in one entry is logged (check E301-E304 names it): it must not stop the
        maintenance loop that runs this, nor the other schedules.
        """
        try:
            sync_declared(self.using)
        except DatabaseError:
            raise
        except Exception:
            logger.exception("SKIPQUEUE_SCHEDULES could not be copied; going on without it")
        self.synced = True

    def start_new(self) -> int:
        """Give enabled schedules without a next tick (created in code, enabled again) one."""
        started = 0
        fresh = Schedule.objects.using(self.using).enabled().filter(next_tick_at__isnull=True)
        for schedule in fresh:
            now = read_db_now(self.using)
            try:
                next_tick = definition_of(schedule).timing.after(now)
            except ValueError as error:
                logger.error("schedule=%s cannot start: %s", schedule.name, error)
                continue
            started += fresh.filter(pk=schedule.pk).update(next_tick_at=next_tick)
        return started

    def _fire_one(self) -> int | None:
        """Lock one due schedule and fire it; None when none is due (or free)."""
        with transaction.atomic(using=self.using):
            schedule = Schedule.objects.using(self.using).lock_due(DatabaseNow())
            if schedule is None:
                return None
            try:
                with transaction.atomic(using=self.using):
                    return fire(schedule, read_db_now(self.using), self.using, self.runner)
            except IntegrityError:
                # A tick row exists already, so its job is rolled back with this attempt: never
                # enqueued twice. Only a write that went around the row lock can cause this;
                # the next turn sees the recorded tick and skips it.
                logger.exception("schedule=%s tick already recorded", schedule.name)
                return 0
