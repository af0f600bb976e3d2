"""The transactions of flow control: take a key's slots, give them back, open rate windows.

Every function here runs inside the caller's transaction and locks the key's ``FlowKey`` row
first (``FOR UPDATE``), so that two transactions never count the same slot. Lock order:
a job row the caller already holds (a job that ends, a job promoted), then the key's row,
then the blocked rows it admits; an enqueue holds no job row before the key's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When

from django_skipqueue import transitions, wakeup
from django_skipqueue.db.clock import DatabaseNow, read_db_now
from django_skipqueue.flow.options import Flow
from django_skipqueue.models import FlowKey, Job, JobStatus
from django_skipqueue.models.job import WAITING_PREFIX

logger = logging.getLogger("django_skipqueue.flow")

#: Most jobs one admission makes ready (a key with a rate limit only, or a large limit).
ADMIT_BATCH = 500
#: Keys the flow timer looks at per transaction.
WAKE_BATCH = 100
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CONFIG = ("limit", "ordered", "on_failure", "rate", "period")


def enqueue(job: Job, flow: Flow, using: str, replace: Any = ()) -> tuple[Job, bool]:
    """Insert ``job`` BLOCKED behind its key (17), then admit what the key allows (18).

    In the caller's transaction: the key's row stays locked until it commits, so that the
    key's jobs are numbered in the order their enqueues commit (what ordered mode runs by).
    A deferred job is inserted SCHEDULED and waits for its key when promoted (19).
    """
    from django_skipqueue.enqueue import insert_job

    job.flow_key = flow.key
    job.flow_slot = False
    if job.status == JobStatus.READY:
        job.status = JobStatus.BLOCKED
    with transaction.atomic(using=using):
        state = lock_key(using, flow)
        job, created = insert_job(job, using, replace)
        if created and job.status == JobStatus.BLOCKED and job.pk in admit(using, state):
            job.status = JobStatus.READY
            job.flow_slot = state.limit is not None
    return job, created


def lock_key(using: str, flow: Flow) -> FlowKey:
    """Lock the key's row (creating it the first time), with the task's current limits."""
    rows = FlowKey.objects.using(using).select_for_update()
    state = rows.filter(key=flow.key).first()
    if state is None:
        try:
            with transaction.atomic(using=using):
                FlowKey.objects.using(using).create(
                    key=flow.key, **{name: getattr(flow, name) for name in _CONFIG}
                )
        except IntegrityError:
            pass  # created meanwhile by another enqueue: lock that one
        state = rows.get(key=flow.key)
    changed = [name for name in _CONFIG if getattr(state, name) != getattr(flow, name)]
    if changed:
        for name in changed:
            setattr(state, name, getattr(flow, name))
        state.save(using=using, update_fields=changed)
    return state


def admit(
    using: str, state: FlowKey, now: datetime | None = None, *, stored_running: int | None = None
) -> list[int]:
    """Make the oldest blocked jobs of a locked key READY, as many as it allows (18).

    The slots free (``limit - running``) and the starts left in the current rate window
    bound how many; the rest stay blocked. When the window is spent, ``wake_at`` asks the
    flow timer to come back at the next one's start. Returns the ids admitted.
    """
    # What the row holds: a release that is followed by one admission writes nothing.
    stored_running = state.running if stored_running is None else stored_running
    free = ADMIT_BATCH if state.limit is None else state.limit - state.running
    changed = set()
    if state.rate is not None and state.period:
        now = now or read_db_now(using)
        start = window_start(now, state.period)
        if state.window_start != start:
            turn_window(using, state, start)
            changed |= {"window_start", "window_count", "window_jobs"}
        free = min(free, state.rate - state.window_count)
    ids: list[int] = []
    if free > 0:
        waiting = Job.objects.using(using).filter(waiting_key=WAITING_PREFIX + state.key)
        waiting = waiting.order_by("id")
        # Ordered keys wait for a row another transaction holds: its place is its id.
        locked = waiting.select_for_update(skip_locked=not state.ordered)
        rows = list(locked.values_list("pk", "queue_name")[:free])
        if rows:
            ids = [pk for pk, _ in rows]
            transitions.admit(
                Job.objects.using(using).filter(pk__in=ids), slot=state.limit is not None
            )
            if state.limit is not None:
                state.running += len(ids)
            if state.rate is not None:
                state.window_count += len(ids)
                state.window_jobs = [*state.window_jobs, *ids]
                changed |= {"window_count", "window_jobs"}
            wakeup.after_commit(using, {queue for _, queue in rows})
    wake_at = None
    spent = state.rate is not None and state.window_count >= state.rate
    if spent and state.window_start is not None and state.period:
        wake_at = state.window_start + timedelta(seconds=state.period)
    if wake_at != state.wake_at:
        state.wake_at = wake_at
        changed.add("wake_at")
    if state.running != stored_running:
        changed.add("running")
    if changed:
        state.save(using=using, update_fields=sorted(changed))
    return ids


def turn_window(using: str, state: FlowKey, start: datetime) -> None:
    """Begin the rate window that starts at ``start``, counting the starts it already holds.

    A start is a claim, which this module never sees: the jobs admitted earlier count in the
    new window if they are still waiting to be claimed (they will start in it) or were
    claimed since it began (before this first admission of the window).
    """
    carried: list[int] = []
    started = 0
    if state.window_jobs:
        rows = Job.objects.using(using).filter(pk__in=state.window_jobs)
        for pk, status, attempted in rows.values_list("pk", "status", "last_attempted_at"):
            if status == JobStatus.READY:
                carried.append(pk)
            elif attempted is not None and attempted >= start:
                started += 1
    state.window_start = start
    state.window_count = len(carried) + started
    state.window_jobs = carried


def window_start(now: datetime, period: float) -> datetime:
    """The start of the fixed rate window that holds ``now`` (aligned to the epoch)."""
    # In whole microseconds: float seconds would put one instant in two windows.
    elapsed = (now - EPOCH) // timedelta(microseconds=1)
    length = max(1, round(period * 1_000_000))
    return EPOCH + timedelta(microseconds=elapsed - elapsed % length)


def release(using: str, key: str, *, failed: bool = False, job_id: int | None = None) -> None:
    """Give back the slot of a job of ``key`` that has just ended, and admit the next.

    Called in the transaction of the fenced UPDATE that ended the job (which cleared its
    ``flow_slot``). An ordered key with ``on_failure="block"`` keeps the slot of a job that
    failed for good: the key waits for an operator's retry or cancellation of it.
    """
    state = FlowKey.objects.using(using).select_for_update().filter(key=key).first()
    if state is None:
        return
    if failed and state.ordered and state.on_failure == "block" and job_id is not None:
        Job.objects.using(using).filter(pk=job_id).update(flow_slot=True)
        logger.warning("ordered key blocked by a failed job key=%s job=%s", key, job_id)
        return
    stored = state.running
    if state.limit is not None and state.running > 0:
        state.running -= 1
    admit(using, state, stored_running=stored)


def release_many(using: str, counts: Mapping[str, int]) -> None:
    """Give back ``counts[key]`` slots of each key (jobs that succeeded in one batch), and
    admit the next jobs; the keys' rows are locked in key order, one read for all of them."""
    rows = FlowKey.objects.using(using).select_for_update().filter(key__in=sorted(counts))
    for state in rows.order_by("key"):
        stored = state.running
        if state.limit is not None:
            state.running = max(0, state.running - counts[state.key])
        admit(using, state, stored_running=stored)


def admit_keys(using: str, keys: Iterable[str]) -> None:
    """Admit what each key allows (its jobs just became blocked), in the caller's transaction."""
    rows = FlowKey.objects.using(using).select_for_update()
    for key in sorted(set(keys)):
        state = rows.filter(key=key).first()
        if state is not None:
            admit(using, state)


def blocked_status() -> Case:
    """A due scheduled job's new status (3 or 19): BLOCKED when it waits for a flow slot."""
    return Case(
        When(flow_key__isnull=False, flow_slot=False, then=Value(JobStatus.BLOCKED)),
        default=Value(JobStatus.READY),
    )


def wake_due(using: str) -> int:
    """The flow timer: admit the jobs of keys whose rate window has opened; return how many."""
    admitted = 0
    with transaction.atomic(using=using):
        due = FlowKey.objects.using(using).filter(wake_at__lte=DatabaseNow()).order_by("wake_at")
        states = list(due.select_for_update(skip_locked=True)[:WAKE_BATCH])
        if states:
            now = read_db_now(using)
            for state in states:
                admitted += len(admit(using, state, now))
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
