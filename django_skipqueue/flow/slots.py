"""The slot bookkeeping of flow control: lock a key, count its slots and windows, choose.

Below ``transitions.py``: it imports no transition. It decides which blocked jobs a key admits
(18) and keeps the key's counters (``running``, the rate window, ``blocked_holders``); the
caller writes the admission itself with ``transitions.admit_chosen()`` in the same transaction,
on rows this module has locked. Every function runs inside the caller's transaction and locks
the key's ``FlowKey`` row first (``FOR UPDATE``), so that two transactions never count the same
slot. Lock order: a job row the caller already holds (a job that ends, a job promoted), then
the key's row, then the blocked rows it admits; an enqueue holds no job row before the key's.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When

from django_skipqueue import wakeup
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.flow.options import Flow
from django_skipqueue.models import FlowKey, Job, JobStatus
from django_skipqueue.models.job import WAITING_PREFIX

logger = logging.getLogger("django_skipqueue.flow")

#: Most jobs one admission makes ready (a key with a rate limit only, or a large limit).
ADMIT_BATCH = 500
#: Seconds before the flow timer looks again at a key whose blocked slot holder was locked by
#: another transaction when the admission wanted it.
LOCKED_HOLDER_RETRY = 1.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CONFIG = ("limit", "ordered", "on_failure", "rate", "period")


@dataclass
class Admitted:
    """Blocked jobs an admission chose (locked): ``transitions.admit_chosen()`` makes them
    READY (18), those of ``with_slot`` holding a slot of their key's limit."""

    with_slot: list[int] = field(default_factory=list)
    without_slot: list[int] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        return [*self.with_slot, *self.without_slot]

    def add(self, other: Admitted) -> Admitted:
        self.with_slot += other.with_slot
        self.without_slot += other.without_slot
        return self


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
    using: str,
    state: FlowKey,
    now: datetime | None = None,
    *,
    stored_running: int | None = None,
    hold: Collection[int] = (),
    drop: Collection[int] = (),
) -> Admitted:
    """Choose the blocked jobs of a locked key to make READY, as many as it allows (18).

    First the slot holders waiting for a rate window (``blocked_holders``, with ``hold``: jobs
    the caller has just made blocked holding their slot; without ``drop``: jobs that have
    just left), by the rate alone, oldest first; then the oldest blocked jobs that need a
    slot, as many as the free slots (``limit - running``) and the starts left in the current
    rate window allow. The rest stay blocked. When the window is spent, ``wake_at`` asks the
    flow timer to come back at the next one's start. Returns the jobs chosen, which the
    caller makes READY (``transitions.admit_chosen()``).
    """
    # What the row holds: a release that is followed by one admission writes nothing.
    stored_running = state.running if stored_running is None else stored_running
    stored_holders = list(state.blocked_holders)
    holders = [pk for pk in stored_holders if pk not in drop]
    holders += [pk for pk in hold if pk not in holders]
    changed: set[str] = set()
    starts, now = _starts_left(using, state, now, changed)
    rows: list[tuple[int, str]] = []
    admitted = Admitted()
    locked = False
    if holders and starts > 0:
        held, holders, locked = _admit_holders(using, state.key, holders, starts)
        admitted.with_slot += [pk for pk, _ in held]
        rows += held
        starts -= len(held)
    free = ADMIT_BATCH if state.limit is None else state.limit - state.running
    new = _choose_new(using, state, min(free, starts))
    if new:
        chosen = admitted.with_slot if state.limit is not None else admitted.without_slot
        chosen += [pk for pk, _ in new]
        if state.limit is not None:
            state.running += len(new)
        rows += new
    ids = [pk for pk, _ in rows]
    if ids:
        if state.rate is not None:
            state.window_count += len(ids)
            state.window_jobs = [*state.window_jobs, *ids]
            changed |= {"window_count", "window_jobs"}
        wakeup.after_commit(using, {queue for _, queue in rows})
    wake_at = _next_wake(using, state, now, locked=locked)
    if wake_at != state.wake_at:
        state.wake_at = wake_at
        changed.add("wake_at")
    if state.running != stored_running:
        changed.add("running")
    if holders != stored_holders:
        state.blocked_holders = holders
        changed.add("blocked_holders")
    if changed:
        state.save(using=using, update_fields=sorted(changed))
    return admitted


def _starts_left(
    using: str, state: FlowKey, now: datetime | None, changed: set[str]
) -> tuple[int, datetime | None]:
    """Starts the key's current rate window has left (turning it first if a new one began),
    and the database's time if it was read; ADMIT_BATCH for a key without a rate."""
    if state.rate is None or not state.period:
        return ADMIT_BATCH, now
    now = now or read_db_now(using)
    start = window_start(now, state.period)
    if state.window_start != start:
        turn_window(using, state, start)
        changed |= {"window_start", "window_count", "window_jobs"}
    return state.rate - state.window_count, now


def _choose_new(using: str, state: FlowKey, free: int) -> list[tuple[int, str]]:
    """Lock the oldest ``free`` blocked jobs of the key that need a slot: ``(id, queue)``."""
    if free <= 0:
        return []
    waiting = Job.objects.using(using).filter(waiting_key=WAITING_PREFIX + state.key)
    # A holder is admitted by the rate alone: never here, where it would take a second slot.
    waiting = waiting.filter(flow_slot=False).order_by("id")
    # Ordered keys wait for a row another transaction holds: its place is its id.
    locked_rows = waiting.select_for_update(skip_locked=not state.ordered)
    return list(locked_rows.values_list("pk", "queue_name")[:free])


def _next_wake(
    using: str, state: FlowKey, now: datetime | None, *, locked: bool
) -> datetime | None:
    """When the flow timer must look at the key again: its next window if this one is spent,
    soon if a blocked holder was locked by another transaction; None otherwise."""
    wake_at = None
    spent = state.rate is not None and state.window_count >= state.rate
    if spent and state.window_start is not None and state.period:
        wake_at = state.window_start + timedelta(seconds=state.period)
    if locked:
        # A holder another transaction has locked (an operator cancelling it, which gives
        # its slot back): the flow timer looks again soon, lest it stay blocked.
        soon = (now or read_db_now(using)) + timedelta(seconds=LOCKED_HOLDER_RETRY)
        wake_at = soon if wake_at is None else min(wake_at, soon)
    return wake_at


def _admit_holders(
    using: str, key: str, holders: list[int], starts: int
) -> tuple[list[tuple[int, str]], list[int], bool]:
    """Choose up to ``starts`` of a key's blocked slot holders, oldest first, by primary key.

    They keep their slot (``running`` does not change). Returns the ``(id, queue)`` admitted,
    the holders still waiting, and whether one was skipped because another transaction holds
    its row. An id that is no longer a blocked holder of the key (cancelled meanwhile) is
    dropped.
    """
    admitted: list[tuple[int, str]] = []
    skipped: list[int] = []
    pending = sorted(holders)
    while pending and len(admitted) < starts:
        count = starts - len(admitted)
        batch, pending = pending[:count], pending[count:]
        rows = Job.objects.using(using).filter(pk__in=batch).select_for_update(skip_locked=True)
        found = {
            pk: (status, slot, flow_key, queue)
            for pk, status, slot, flow_key, queue in rows.values_list(
                "pk", "status", "flow_slot", "flow_key", "queue_name"
            )
        }
        if len(found) < len(batch):
            # Locked by another transaction (kept), or deleted (dropped): a plain read tells.
            missing = [pk for pk in batch if pk not in found]
            skipped += Job.objects.using(using).filter(pk__in=missing).values_list("pk", flat=True)
        admitted += [
            (pk, found[pk][3])
            for pk in batch
            if pk in found and found[pk][:3] == (JobStatus.BLOCKED, True, key)
        ]
    return admitted, sorted([*skipped, *pending]), bool(skipped)


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


def free_slot(
    using: str, key: str, *, failed: bool = False, job_id: int | None = None
) -> Admitted:
    """Give back the slot of a job of ``key`` that has just ended, and admit the next.

    Called in the transaction of the fenced UPDATE that ended the job (which cleared its
    ``flow_slot``). An ordered key with ``on_failure="block"`` keeps the slot of a job that
    failed for good: the key waits for an operator's retry or cancellation of it.
    """
    state = FlowKey.objects.using(using).select_for_update().filter(key=key).first()
    if state is None:
        return Admitted()
    if failed and state.ordered and state.on_failure == "block" and job_id is not None:
        Job.objects.using(using).filter(pk=job_id).update(flow_slot=True)
        logger.warning("ordered key blocked by a failed job key=%s job=%s", key, job_id)
        return Admitted()
    stored = state.running
    if state.limit is not None and state.running > 0:
        state.running -= 1
    # A blocked holder that is cancelled leaves the key's waiting holders.
    return admit(using, state, stored_running=stored, drop=() if job_id is None else (job_id,))


def free_slots(using: str, counts: Mapping[str, int]) -> Admitted:
    """Give back ``counts[key]`` slots of each key (jobs that succeeded in one batch), and
    admit the next jobs; the keys' rows are locked in key order, one read for all of them."""
    rows = FlowKey.objects.using(using).select_for_update().filter(key__in=sorted(counts))
    admitted = Admitted()
    for state in rows.order_by("key"):
        stored = state.running
        if state.limit is not None:
            state.running = max(0, state.running - counts[state.key])
        admitted.add(admit(using, state, stored_running=stored))
    return admitted


def admit_keys(
    using: str, keys: Iterable[str], holders: Mapping[str, Collection[int]] | None = None
) -> Admitted:
    """Choose what each key allows (its jobs just became blocked), in the caller's transaction.

    ``holders``: per key, the jobs among them that hold a slot; they join the key's
    ``blocked_holders`` and wait for its rate window alone.
    """
    holders = holders or {}
    rows = FlowKey.objects.using(using).select_for_update()
    admitted = Admitted()
    for key in sorted(set(keys) | set(holders)):
        state = rows.filter(key=key).first()
        if state is not None:
            admitted.add(admit(using, state, hold=holders.get(key, ())))
    return admitted


def hold(using: str, key: str, job_id: int) -> Admitted:
    """A job of ``key`` that holds a slot has just become blocked (21): it waits for the
    key's rate window alone, and is admitted at once if the window has starts left."""
    return admit_keys(using, [key], {key: [job_id]})


def blocked_status() -> Case:
    """A due scheduled (or retried) job's new status: BLOCKED for a job of a flow key (19, 20),
    which its key admits (a slot holder by the rate alone); READY for a plain job (3, 12)."""
    return Case(
        When(flow_key__isnull=False, then=Value(JobStatus.BLOCKED)),
        default=Value(JobStatus.READY),
    )
