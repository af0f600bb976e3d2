"""The fenced UPDATEs, single and batched: the only code that writes a job's status.

Each function applies transitions of ``states.py`` (numbered as in
docs/discussions/job-states.md) and writes only what they declare. A transition out of CLAIMED
is fenced: guarded by id, owner and attempt (the lease token). If the UPDATE matches no row the
lease was lost (reaped, or taken over after it expired): the caller changes nothing and counts
it. Django's MySQL backend sets CLIENT.FOUND_ROWS, so ``update()`` returns rows *matched*,
which is what the fence needs. Enqueue (1, 2) inserts whole rows (enqueue.py) and the purge (13)
deletes them (maintenance/archive.py): neither is an UPDATE.

A job that belongs to a batch (``Job.batch_id``) has its outcome announced to the outcome
listeners (``hooks.py``: the workflows app counts it) in the same transaction as the fenced
UPDATE that records it: a write the fence rejects is announced to nobody, and a listener's
writes never commit without the outcome. A plain job pays one attribute check and no query.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Case, F, QuerySet, Value, When
from django.db.models.functions import Greatest

from django_skipqueue import batched_success
from django_skipqueue.db import statements
from django_skipqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_skipqueue.flow import slots
from django_skipqueue.hooks import Ended, outcomes_recorded
from django_skipqueue.models import Job

if TYPE_CHECKING:
    from django_skipqueue.managers import JobQuerySet

from django_skipqueue.states import (
    CANCEL_RUNNING,
    CANCELLABLE_STATUSES,
    FINISHED_STATUSES,
    Ending,
    JobStatus,
    retry_after,
)

#: Rows a caller has locked (and guarded) for a batched transition.
Rows = QuerySet[Job, Job]


def count_in_batches(using: str, ended: Sequence[Ended]) -> None:
    """Tell the outcome listeners of ``ended`` in the caller's transaction (hooks.py)."""
    outcomes_recorded(using, ended)


def fenced(job: Job) -> JobQuerySet:
    """Return a queryset matching ``job`` only while its holder still owns this attempt."""
    return Job.objects.using(job._state.db or "default").filter(
        pk=job.pk, owner=job.owner, attempts=job.attempts, status=JobStatus.CLAIMED
    )


# 3 promote, 18 admit, 4 claim (the manager's, ``managers.claimed_fields``), 8 release.


def promote(
    rows: Rows,
    flow_keys: Collection[str] = (),
    holders: Mapping[str, Collection[int]] | None = None,
) -> int:
    """Make the due scheduled jobs of ``rows`` (locked by the caller) ready (3).

    ``flow_keys`` are the flow keys of those rows: a job of one waits blocked instead (19),
    and its key admits what it allows, in the same transaction. ``holders``: per key, the
    jobs among them that hold a slot (a retry after a backoff, a snooze): they keep it and
    wait for the key's rate window alone.
    """
    scheduled = rows.filter(status=JobStatus.SCHEDULED)
    if not flow_keys:
        return scheduled.update(status=JobStatus.READY)
    written = scheduled.update(status=slots.blocked_status())
    admit_chosen(rows.db, slots.admit_keys(rows.db, flow_keys, holders))
    return written


def admit(rows: Rows, *, slot: bool) -> int:
    """Make the blocked jobs of ``rows`` (locked by the caller, under their key's row) ready (18).

    ``slot``: they take a slot of their key's concurrency limit (``flow_slot``), which their
    end gives back.
    """
    return rows.filter(status=JobStatus.BLOCKED).update(status=JobStatus.READY, flow_slot=slot)


def admit_chosen(using: str, chosen: slots.Admitted) -> None:
    """Admit (18) the jobs a key's bookkeeping chose (``flow/slots.py``), in its transaction."""
    jobs = Job.objects.using(using)
    if chosen.with_slot:
        admit(jobs.filter(pk__in=chosen.with_slot), slot=True)
    if chosen.without_slot:
        admit(jobs.filter(pk__in=chosen.without_slot), slot=False)


def release(job: Job) -> bool:
    """Give a claimed job that never started back without spending an attempt (8)."""
    # started_at first: MySQL evaluates SET left to right, so it must see the old attempts.
    return _apply(
        job,
        None,
        started_at=Case(When(attempts__lte=1, then=Value(None)), default=F("started_at")),
        status=JobStatus.READY,
        owner=None,
        lease_until=None,
        attempts=F("attempts") - 1,
    )


def snooze(job: Job, seconds: float) -> bool:
    """Run a claimed job again in ``seconds`` without spending its attempt (14).

    As the release (8), the attempt is given back (so ``context.attempt`` is the same next
    time, and ``started_at`` is cleared if it was the first); unlike it, the job waits as
    scheduled and its ``snoozes`` grows, which bounds how often it can do this.
    """
    # started_at first: MySQL evaluates SET left to right, so it must see the old attempts.
    return _apply(
        job,
        started_at=Case(When(attempts__lte=1, then=Value(None)), default=F("started_at")),
        status=JobStatus.SCHEDULED,
        run_after=DatabaseNowPlus(seconds),
        owner=None,
        lease_until=None,
        attempts=F("attempts") - 1,
        snoozes=F("snoozes") + 1,
    )


# 15, 16 replace: a keyed enqueue with unique_replace (debounce) changes the waiting holder.


def replace_waiting(holder: Job, fields: dict[str, Any], *, deferred: bool) -> JobStatus | None:
    """Write ``fields`` (args, kwargs, run_after) into a waiting job that holds a key (15, 16,
    22); return its new status, None if it was no longer waiting.

    Guarded by the status it was read in and its key: a holder claimed (or promoted) meanwhile
    is left alone, and the caller looks again. A scheduled holder of a flow key that is to run
    now waits blocked (22) and its key admits what it allows, in the same transaction, as a
    promoted one does (19): it must not start without its key's slot and rate window.
    """
    using = holder._state.db or "default"
    rows = Job.objects.using(using).filter(
        pk=holder.pk, status=holder.status, active_key=holder.idempotency_key
    )
    if deferred or holder.flow_key is None or holder.status == JobStatus.READY:
        status = JobStatus.SCHEDULED if deferred else JobStatus.READY
        return status if rows.update(**fields, status=status) == 1 else None
    with transaction.atomic(using=using):
        if rows.update(**fields, status=JobStatus.BLOCKED) != 1:
            return None
        _admit(using, holder.flow_key, holder.pk if holder.flow_slot else None)
        # Admitted at once when its key had room.
        now = Job.objects.using(using).filter(pk=holder.pk).values_list("status", flat=True)
        return JobStatus(now[0])


# No transition: the lease of a claimed job renewed, its cancellation requested.


def renew(owner: str, using: str, ids: Collection[int], lease: float | None) -> dict[int, bool]:
    """Extend the leases of the jobs ``owner`` holds with one UPDATE (the status stays).

    Returns the ids still held, each with its ``cancel_requested`` flag; an id missing from the
    answer was taken over (its lease had expired), so its completion will be rejected.
    """
    if not ids:
        return {}
    held = Job.objects.using(using).held_by(owner).filter(pk__in=list(ids))
    held.update(lease_until=DatabaseNowPlus(F("lease_seconds") if lease is None else lease))
    return dict(held.values_list("pk", "cancel_requested"))


def request_cancel(rows: Rows) -> int:
    """Ask the workers running the claimed jobs of ``rows`` to stop them (not a transition)."""
    return rows.filter(status=JobStatus.CLAIMED).update(cancel_requested=True)


# 5 to 10: how an attempt ends, fenced on the lease token.


def succeed(job: Job, return_value: Any) -> bool:
    """Record success (5); return False if the lease was lost."""
    fields = {"worker_ids": [*job.worker_ids, job.owner], "lease_until": None}
    ended = _ended(job, JobStatus.SUCCEEDED, return_value)
    return _apply(
        job,
        ended,
        status=JobStatus.SUCCEEDED,
        return_value=return_value,
        finished_at=DatabaseNow(),
        **fields,
    )


def fail(job: Job, error: dict[str, str], *, retry_in: float | None) -> bool:
    """End a failed attempt: retry in ``retry_in`` seconds (6, 7), or fail for good (9)."""
    return end_attempt(job, error, retry_after(retry_in, flow_key=job.flow_key))


def cancel_running(job: Job, error: dict[str, str]) -> bool:
    """Record that a running job stopped because its cancellation was requested (10)."""
    return end_attempt(job, error, Ending(CANCEL_RUNNING))


def end_attempt(job: Job, error: dict[str, str], step: Ending) -> bool:
    """Apply ``step`` (6, 7, 9, 10 or 21: ``states.next_step()``) to the worker's attempt that
    did not succeed."""
    ended = None if step.retried else _ended(job, step.status)
    fields = _attempt_over(job.errors, job.worker_ids, job.owner, error, step)
    return _apply(job, ended, **fields)


def interrupt(job: Job, error: dict[str, str]) -> bool:
    """Give back a job whose attempt began but was cut short by its worker's stop (7).

    The attempt counts: its error and worker id are added, and ``started_at`` and
    ``attempts`` stay. The job is ready again at once, with one more attempt if that was its
    last: the stop was the worker's, not the job's. A job of a flow key waits blocked for its
    key's admission instead (21): the attempt it ran was a start, and so is the next.
    """
    step = retry_after(0.0, flow_key=job.flow_key)
    fields = _attempt_over(job.errors, job.worker_ids, job.owner, error, step)
    return _apply(job, None, **fields, max_attempts=max(job.max_attempts, job.attempts + 1))


def end_lost_lease(using: str, row: dict[str, Any], error: dict[str, str], step: Ending) -> int:
    """Apply ``step`` to an expired lease (the reaper: 6, 7, 9, 10 or 21); return rows written.

    ``row`` holds the fence as the reaper read it; the lease must still be expired, so a
    worker that renewed it meanwhile keeps its job. The owner is cleared in every case. A
    retry at once of a job of a flow key waits blocked (21), and its key admits what it
    allows in the same transaction (a slot holder by the rate alone).
    """
    fields = _attempt_over(row["errors"], row["worker_ids"], row["owner"], error, step)
    rows = Job.objects.using(using).expired()
    fence = rows.filter(pk=row["pk"], owner=row["owner"], attempts=row["attempts"])
    batch_id = row.get("batch_id")
    slot = bool(row.get("flow_slot")) and not step.retried
    blocked = step.status == JobStatus.BLOCKED
    if (batch_id is None or step.retried) and not slot and not blocked:
        return fence.update(**{**fields, "owner": None})
    if slot:
        fields["flow_slot"] = False
    with transaction.atomic(using=using):
        written = fence.update(**{**fields, "owner": None})
        if written and batch_id is not None and not step.retried:
            count_in_batches(using, [Ended(batch_id, step.status, row["pk"])])
        if written and slot:
            _free_slot(using, row["flow_key"], row["pk"], step.status)
        if written and blocked:
            _admit(using, row["flow_key"], row["pk"] if row.get("flow_slot") else None)
    return written


def _attempt_over(
    errors: list[Any], worker_ids: list[Any], owner: str | None, error: Any, step: Ending
) -> dict[str, Any]:
    """Return what an attempt that did not succeed writes for ``step``'s transition."""
    fields: dict[str, Any] = {
        "status": step.status,
        "errors": [*errors, error],
        "worker_ids": [*worker_ids, owner],
        "lease_until": None,
    }
    if not step.retried:
        return {**fields, "finished_at": DatabaseNow()}
    if step.delay:
        fields["run_after"] = DatabaseNowPlus(step.delay)
    return {**fields, "owner": None}


def _ended(job: Job, status: JobStatus, return_value: Any = None) -> Ended | None:
    """What a batch counts of this outcome; None for a job outside any batch."""
    if job.batch_id is None:
        return None
    return Ended(job.batch_id, status, job.pk, return_value)


def _apply(job: Job, ended: Ended | None = None, **fields: Any) -> bool:
    """Write the fenced UPDATE; count ``ended`` in its batch in the same transaction.

    A job that ends holding a flow slot gives it back in that transaction too, and a job
    that waits blocked for its key again (21) has its key admit what it allows (itself, if
    it holds a slot, by the rate alone).
    """
    slot = job.flow_slot and fields.get("status") in FINISHED_STATUSES
    blocked = fields.get("status") == JobStatus.BLOCKED
    if ended is None and not slot and not blocked:
        return fenced(job).update(**fields) == 1
    if slot:
        fields["flow_slot"] = False
    using = job._state.db or "default"
    # A savepoint inside the worker's transaction (a transaction of its own otherwise); a
    # flow slot alone needs none: half of it is worth nothing, and the worker retries the
    # whole transaction (two statements fewer per keyed job).
    with transaction.atomic(using=using, savepoint=ended is not None):
        written = fenced(job).update(**fields) == 1
        if written and ended is not None:
            count_in_batches(using, [ended])
        if written and slot:
            _free_slot(using, job.flow_key, job.pk, fields["status"])
        if written and blocked:
            _admit(using, job.flow_key, job.pk if job.flow_slot else None)
    return written


def _admit(using: str, key: str | None, holder: int | None) -> None:
    """Admit what the key of a job that has just become blocked allows (18, after 21).

    A rate window with starts left makes the job ready again in the same transaction; a
    spent one leaves it blocked until the flow timer opens the next window. ``holder``: the
    job holds a slot, which it keeps; it waits in the key's ``blocked_holders`` for the rate
    alone (at once on a key without a rate).
    """
    if key is None:
        return
    if holder is None:
        admit_chosen(using, slots.admit_keys(using, [key]))
    else:
        admit_chosen(using, slots.hold(using, key, holder))


def _free_slot(using: str, key: str | None, job_id: int, status: Any) -> None:
    """Give the flow slot of a job that has just ended back to its key (flow control)."""
    if key is not None:
        failed = status == JobStatus.FAILED
        admit_chosen(using, slots.free_slot(using, key, failed=failed, job_id=job_id))


# 5, batched: many successes of one owner, one fenced UPDATE.


def succeed_many(jobs: Sequence[Job], return_values: Sequence[Any]) -> list[bool]:
    """Record the success of ``jobs`` (one owner); return, per job, whether it was written.

    One UPDATE per batch instead of one per job, still fenced per row: a row is written only
    while it is claimed by this owner at the attempt the worker ran (``(id = a AND attempts =
    x) OR (id = b AND ...)``). Run it inside a transaction: if the fence rejected some rows,
    the rows this owner has just marked are still locked by it, so reading them back is exact.
    """
    if not jobs:
        return []
    slots = any(job.flow_slot for job in jobs)  # flow control: they give their slots back
    if not slots and all(job.batch_id is None for job in jobs):
        return _succeed_many(jobs, return_values)
    using = jobs[0]._state.db or "default"
    with transaction.atomic(using=using):
        written = _succeed_many(jobs, return_values)
        ended = [
            Ended(job.batch_id, JobStatus.SUCCEEDED, job.pk, value)
            for job, value, ok in zip(jobs, return_values, written, strict=True)
            if ok and job.batch_id is not None
        ]
        count_in_batches(using, ended)
        if slots:
            held = [job for job, ok in zip(jobs, written, strict=True) if ok and job.flow_slot]
            _free_slots(using, held)
    return written


def _free_slots(using: str, jobs: Sequence[Job]) -> None:
    """Clear the flow slots of jobs that have just succeeded together; give them back (5)."""
    if not jobs:
        return
    Job.objects.using(using).filter(pk__in=[job.pk for job in jobs]).update(flow_slot=False)
    counts = Counter(job.flow_key for job in jobs if job.flow_key)
    admit_chosen(using, slots.free_slots(using, counts))


def succeed_many_later(
    jobs: Sequence[Job], return_values: Sequence[Any]
) -> Callable[[], list[bool]]:
    """:func:`succeed_many`, its UPDATE sent with the transaction's next round trip.

    Returns what tells, once called (still inside the transaction), per job, whether it was
    written. The worker records its finished jobs this way in the transaction of its next
    claim: the UPDATE goes out with the claim's locking read (db/statements.py, ``defer``).
    Jobs of a batch or holding a flow slot are recorded at once (their batch's counts, their
    slot, follow in the same step).
    """
    if not jobs or any(job.batch_id is not None or job.flow_slot for job in jobs):
        at_once = succeed_many(jobs, return_values)
        return lambda: at_once
    using = jobs[0]._state.db or "default"
    statement, values = batched_success.statement(jobs, return_values)
    matched = statements.defer(using, statements.Run(statement, values))

    def written() -> list[bool]:
        if matched.result() == len(jobs):
            return [True] * len(jobs)
        return batched_success.written(jobs, using)

    return written


def _succeed_many(jobs: Sequence[Job], return_values: Sequence[Any]) -> list[bool]:
    using = jobs[0]._state.db or "default"
    statement, values = batched_success.statement(jobs, return_values)
    if statements.execute(using, statement, values) == len(jobs):
        return [True] * len(jobs)
    return batched_success.written(jobs, using)


# 11 cancel, 12 retry: an operator's changes, on rows the admin locked with their guard.


def cancel_waiting(rows: Rows, errors: list[Any], job: Job) -> int:
    """Cancel one waiting job (11): ``rows`` is its guarded queryset, ``errors`` its new list.

    ``job`` is the locked row (its ``batch_id`` read), whose cancellation its batch counts.
    """
    waiting = rows.filter(status__in=CANCELLABLE_STATUSES)
    fields = {"status": JobStatus.CANCELLED, "finished_at": DatabaseNow(), "errors": errors}
    if job.batch_id is None and not job.flow_slot:
        return waiting.update(**fields)
    if job.flow_slot:
        fields["flow_slot"] = False
    with transaction.atomic(using=rows.db):
        written = waiting.update(**fields)
        if written and job.batch_id is not None:
            count_in_batches(rows.db, [Ended(job.batch_id, JobStatus.CANCELLED, job.pk)])
        if written and job.flow_slot:
            _free_slot(rows.db, job.flow_key, job.pk, JobStatus.CANCELLED)
    return written


def retry_failed(rows: Rows, jobs: Sequence[Job] = ()) -> int:
    """Move the failed jobs of ``rows`` back to ready (12), one more attempt each.

    The attempt counter is kept, because it is part of the lease fence and numbers the stored
    errors; the job gets one attempt more than it has spent instead (or keeps its unspent
    ones, if it failed early on an error that is not retried). ``jobs`` are the rows the
    caller locked under the guard (their ``batch_id`` read): their batches count them as
    failed no more, in the same transaction.
    """
    ended = [Ended(job.batch_id, JobStatus.READY, job.pk) for job in jobs if job.batch_id]
    if not ended:
        return _retry_failed(rows)
    with transaction.atomic(using=rows.db):
        written = _retry_failed(rows)
        count_in_batches(rows.db, ended)
    return written


def _retry_failed(rows: Rows) -> int:
    failed = rows.filter(status=JobStatus.FAILED)
    # Flow control: a job that gave its slot back waits for one again, and a job that kept
    # it (an ordered key that blocks on failure) waits for its key's rate window (20).
    keyed = failed.filter(flow_key__isnull=False).values_list("pk", "flow_key", "flow_slot")
    keys: set[str] = set()
    holders: dict[str, list[int]] = {}
    for pk, key, slot in keyed:
        if key is None:
            continue
        keys.add(key)
        if slot:
            holders.setdefault(key, []).append(pk)
    if not keys:
        return _retry_failed_as(failed, JobStatus.READY)
    with transaction.atomic(using=rows.db):
        written = _retry_failed_as(failed, slots.blocked_status())
        admit_chosen(rows.db, slots.admit_keys(rows.db, keys, holders))
    return written


def _retry_failed_as(failed: Rows, status: Any) -> int:
    return failed.update(
        status=status,
        owner=None,
        lease_until=None,
        run_after=None,
        finished_at=None,
        cancel_requested=False,
        max_attempts=Greatest(F("max_attempts"), F("attempts") + 1),
    )
