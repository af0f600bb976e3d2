"""Schedules declared in SKIPQUEUE_SCHEDULES, copied into the schedules table by each scheduler.

Settings are the source of truth for these rows: a changed entry updates its row (and moves
its next tick when the timing changed), an entry removed from settings disables its row and
keeps its history. A row of the same name created in the admin is left alone, with an error
in the log: ``manage.py check`` cannot see the database, so the scheduler says it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db import IntegrityError, transaction

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.exceptions import InvalidSchedule
from django_skipqueue.scheduling.definition import Definition, from_setting
from django_skipqueue.scheduling.models import Schedule, Source

logger = logging.getLogger("django_skipqueue.scheduler")
#: Fields whose change moves the next tick.
TIMING_FIELDS = ("cron", "interval_seconds", "time_zone", "enabled")


def declared() -> Iterator[Definition]:
    """The valid entries of SKIPQUEUE_SCHEDULES (check E301-E304 reports the others)."""
    for name, entry in get_settings().SCHEDULES.items():
        try:
            yield from_setting(name, entry)
        except InvalidSchedule as error:
            logger.error("SKIPQUEUE_SCHEDULES[%r] ignored: %s", name, error)


def sync_declared(using: str) -> None:
    """Create, update or disable the settings' rows so that they match SKIPQUEUE_SCHEDULES."""
    definitions = list(declared())
    for definition in definitions:
        try:
            with transaction.atomic(using=using):
                _sync_one(definition, using)
        except IntegrityError:  # another scheduler created it meanwhile: it is in sync
            pass
    names = [definition.name for definition in definitions]
    rows = Schedule.objects.using(using).filter(source=Source.SETTINGS, enabled=True)
    # A plain read first: an UPDATE scanning the table would wait for rows other schedulers lock.
    stale = list(rows.exclude(name__in=names).values_list("pk", flat=True))
    if stale:
        rows.filter(pk__in=stale).update(
            enabled=False, next_tick_at=None, last_error="no longer in SKIPQUEUE_SCHEDULES"
        )


def _sync_one(definition: Definition, using: str) -> None:
    values = definition.fields()
    row = Schedule.objects.using(using).select_for_update().filter(name=definition.name).first()
    if row is None:
        next_tick = definition.timing.after(read_db_now(using)) if definition.enabled else None
        Schedule.objects.using(using).create(
            name=definition.name, source=Source.SETTINGS, next_tick_at=next_tick, **values
        )
        return
    if row.source != Source.SETTINGS:
        logger.error(
            "SKIPQUEUE_SCHEDULES[%r] ignored: a schedule of that name was created in the database",
            definition.name,
        )
        return
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    if not changed:
        return
    for name in changed:
        setattr(row, name, values[name])
    if set(changed) & set(TIMING_FIELDS):
        row.next_tick_at = definition.timing.after(read_db_now(using)) if row.enabled else None
        changed.append("next_tick_at")
    row.last_error = ""
    row.save(using=using, update_fields=[*changed, "last_error", "updated_at"])
