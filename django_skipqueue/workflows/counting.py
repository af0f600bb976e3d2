"""Count job outcomes in their batches and fire what became due: callbacks, a chain's next step.

An outcome listener (``django_skipqueue.hooks``), registered by the app's ``ready()``:
``transitions.py`` calls it inside the transaction that writes the outcomes (so a
fenced write that lost counts nothing, and a count never commits without its write). The
counters' UPDATE locks the batch row until that transaction ends: every other outcome of the
batch waits for it, then reads the counters it left. The transaction that makes a batch done
is therefore exactly one, and it enqueues the callbacks and sets their job ids and
``finished_at`` before it commits; ``failure_job_id`` likewise for the first failure.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import F

from django_skipqueue.context import resolve_task
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.enqueue import build_job, insert_job
from django_skipqueue.hooks import Ended
from django_skipqueue.states import JobStatus
from django_skipqueue.workflows.models import Batch, Kind, Member

logger = logging.getLogger("django_skipqueue.workflows")


def count(using: str, ended: Sequence[Ended]) -> None:
    """Add ``ended`` to their batches' counters and settle each batch, in the caller's txn.

    Batches are locked newest first: a nested batch is newer than its parent, and finishing it
    counts it in the parent, so every transaction takes the locks in the same order.
    """
    by_batch: dict[int, list[Ended]] = defaultdict(list)
    for each in ended:
        by_batch[each.batch_id].append(each)
    for batch_id in sorted(by_batch, reverse=True):
        _count_one(using, batch_id, by_batch[batch_id])


def settle_now(using: str, batch_id: int) -> None:
    """Lock the batch and fire what is due (an empty batch is done as soon as it closes)."""
    _count_one(using, batch_id, [])


def _count_one(using: str, batch_id: int, ended: list[Ended]) -> None:
    delta = Counter(each.status for each in ended)
    rows = Batch.objects.using(using).filter(pk=batch_id)
    changed = rows.update(
        succeeded=F("succeeded") + delta[JobStatus.SUCCEEDED],
        failed=F("failed") + delta[JobStatus.FAILED] - delta[JobStatus.READY],
        cancelled=F("cancelled") + delta[JobStatus.CANCELLED],
    )
    if not changed:  # deleted in the admin: its jobs run on, counted nowhere
        return
    # Read under the lock the UPDATE holds: no other transaction can change it meanwhile.
    batch = rows.get()
    error_before = batch.callback_error
    changes: dict[str, Any] = {}
    if batch.kind == Kind.CHAIN:
        _next_step(batch, ended, using, changes)
    if delta[JobStatus.FAILED] or changes.get("failed"):
        _first_failure(batch, using, changes)
    if batch.finished_at is None and _done(batch):
        _finish(batch, using, changes)
    if batch.callback_error != error_before:
        changes["callback_error"] = batch.callback_error
    if changes:
        rows.update(**changes)
    if "finished_at" in changes and batch.parent_id is not None:
        count(using, [Ended(batch.parent_id, _outcome(batch), 0)])


def _done(batch: Batch) -> bool:
    if batch.kind == Kind.CHAIN and (batch.failed or batch.cancelled):
        return True  # a failed step stops the chain
    return batch.ended >= batch.size


def _outcome(batch: Batch) -> JobStatus:
    """How a finished nested batch counts in its parent."""
    if batch.failed:
        return JobStatus.FAILED
    return JobStatus.CANCELLED if batch.cancelled else JobStatus.SUCCEEDED


def _first_failure(batch: Batch, using: str, changes: dict[str, Any]) -> None:
    if batch.on_failure and batch.failure_job_id is None and batch.finished_at is None:
        job_id = _callback(batch, batch.on_failure, using)
        batch.failure_job_id = changes["failure_job_id"] = job_id


def _finish(batch: Batch, using: str, changes: dict[str, Any]) -> None:
    """Enqueue the finishing callbacks and mark the batch finished, in this transaction."""
    changes["finished_at"] = DatabaseNow()
    if batch.on_success and not batch.failed and not batch.cancelled:
        changes["success_job_id"] = _callback(batch, batch.on_success, using)
    if batch.on_finish:
        changes["finish_job_id"] = _callback(batch, batch.on_finish, using)
    logger.info(
        "batch=%s finished size=%s succeeded=%s failed=%s cancelled=%s",
        batch.pk,
        batch.size,
        batch.succeeded,
        batch.failed,
        batch.cancelled,
    )


def _callback(batch: Batch, path: str, using: str) -> int | None:
    """Enqueue one callback (the batch id, then its kwargs); None if it cannot be enqueued."""
    job_id = _insert(path, [batch.pk], batch.callback_kwargs, None, using, batch)
    if job_id is not None:
        logger.info("batch=%s callback=%s job=%s", batch.pk, path, job_id)
    return job_id


def _next_step(batch: Batch, ended: list[Ended], using: str, changes: dict[str, Any]) -> None:
    """Enqueue a chain's next step with the return value of the step that just succeeded."""
    done = [each for each in ended if each.status == JobStatus.SUCCEEDED]
    if not done or not batch.steps:
        return
    following, *rest = batch.steps
    args = [done[-1].return_value, *following["args"]]
    job_id = _insert(following["task_path"], args, following["kwargs"], batch.pk, using, batch)
    changes["steps"] = batch.steps = rest
    if job_id is None:  # the step cannot run: it counts as failed, and the chain stops
        batch.failed += 1
        changes["failed"] = F("failed") + 1
        return
    Member.objects.using(using).create(job_id=job_id, batch_id=batch.pk)


def _insert(
    path: str,
    args: list[Any],
    kwargs: dict[str, Any],
    batch_id: int | None,
    using: str,
    batch: Batch,
) -> int | None:
    """Insert a job of task ``path`` in this transaction; record why on the batch if it cannot.

    No wake-up is sent: the worker's transaction is not one Django manages, so the job is
    picked up at the workers' next poll.
    """
    try:
        task = resolve_task(path)
        with transaction.atomic(using=using):  # a savepoint: a refused insert leaves the rest
            job = build_job(task, args, kwargs)
            job.batch_id = batch_id
            job, _ = insert_job(job, using)
        return int(job.pk)
    except DatabaseError:
        raise
    except Exception as error:  # the task's import or arguments: the user's code
        logger.exception("batch=%s could not enqueue %s", batch.pk, path)
        batch.callback_error += f"{path}: {type(error).__name__}: {error}\n"
        return None
