"""The transactions of flow control above the state machine: a keyed enqueue, the flow timer.

Each runs the slot bookkeeping of ``slots.py`` (which chooses what a key admits) and writes
the admission with ``transitions.admit_chosen()`` in the same transaction.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from django_skipqueue import transitions
from django_skipqueue.db.clock import DatabaseNow, read_db_now
from django_skipqueue.enqueue import insert_job
from django_skipqueue.flow.options import Flow
from django_skipqueue.flow.slots import admit, lock_key, window_start
from django_skipqueue.models import FlowKey, Job, JobStatus

__all__ = ["enqueue", "seconds_to_next_wake", "wake_due", "window_start"]

#: Keys the flow timer looks at per transaction.
WAKE_BATCH = 100


def enqueue(job: Job, flow: Flow, using: str, replace: Any = ()) -> tuple[Job, bool]:
    """Insert ``job`` BLOCKED behind its key (17), then admit what the key allows (18).

    In the caller's transaction: the key's row stays locked until it commits, so that the
    key's jobs are numbered in the order their enqueues commit (what ordered mode runs by).
    A deferred job is inserted SCHEDULED and waits for its key when promoted (19).
    """
    job.flow_key = flow.key
    job.flow_slot = False
    if job.status == JobStatus.READY:
        job.status = JobStatus.BLOCKED
    with transaction.atomic(using=using):
        state = lock_key(using, flow)
        job, created = insert_job(job, using, replace)
        if created and job.status == JobStatus.BLOCKED:
            admitted = admit(using, state)
            transitions.admit_chosen(using, admitted)
            if job.pk in admitted.ids:
                job.status = JobStatus.READY
                job.flow_slot = state.limit is not None
    return job, created


def wake_due(using: str) -> int:
    """The flow timer: admit the jobs of keys whose rate window has opened; return how many."""
    admitted = 0
    with transaction.atomic(using=using):
        due = FlowKey.objects.using(using).filter(wake_at__lte=DatabaseNow()).order_by("wake_at")
        states = list(due.select_for_update(skip_locked=True)[:WAKE_BATCH])
        if states:
            now = read_db_now(using)
            for state in states:
                chosen = admit(using, state, now)
                transitions.admit_chosen(using, chosen)
                admitted += len(chosen.ids)
    return admitted


def seconds_to_next_wake(using: str) -> float | None:
    """Seconds until the earliest ``wake_at`` (0 if past), or None when no key waits."""
    first = (
        FlowKey.objects.using(using)
        .filter(wake_at__isnull=False)
        .order_by("wake_at")
        .values_list("wake_at", flat=True)
        .first()
    )
    if first is None:
        return None
    return max(0.0, (first - read_db_now(using)).total_seconds())
