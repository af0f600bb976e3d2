"""Record how attempts ended: fenced transitions, batched into one transaction where safe.

Batching is safe for outcomes whose attempt is over: each UPDATE is fenced on its own (id,
owner, attempt), so one transaction for several of them changes nothing about who wins; it only
saves a commit per job. Transactional tasks are the exception: they commit their completion
with their own writes, inside the job (see executor.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.utils import timezone

from django_skipqueue import transitions, wakeup
from django_skipqueue.batched_success import committed_successes
from django_skipqueue.compat import TaskResult, task_finished
from django_skipqueue.context import build_result, resolve_task, task_for_job, update_result
from django_skipqueue.db.outage import is_too_large
from django_skipqueue.db.statements import retry_whole_transaction, short_transaction
from django_skipqueue.exceptions import ResultTooLarge, WorkerStopped, message_record
from django_skipqueue.models import Job
from django_skipqueue.queues import backend_class
from django_skipqueue.states import RELEASE, SNOOZE, SUCCEED, JobStatus
from django_skipqueue.worker.attempt import Outcome, too_large_message
from django_skipqueue.worker.reclaim import reclaim as reclaim  # its old home

logger = logging.getLogger("django_skipqueue.outcomes")
#: Job lines and task_finished receivers log as the worker, where operators look for them.
job_logger = logging.getLogger("django_skipqueue.worker")


def record(outcomes: Sequence[Outcome], using: str) -> None:
    """Write every unrecorded outcome in one transaction; mark those the fence rejected."""
    if any(not outcome.recorded for outcome in outcomes):

        def batch() -> list[bool]:
            with short_transaction(using):
                return write(outcomes)

        settle(outcomes, retry_whole_transaction(using, batch))


def write(outcomes: Sequence[Outcome]) -> list[bool]:
    """Apply the unrecorded outcomes' fenced transitions in the caller's transaction.

    Returns, for each of them, whether the fence let it through; pass that to :func:`settle`
    once the transaction has committed.
    """
    todo = [outcome for outcome in outcomes if not outcome.recorded]
    return _transitions(todo) if todo else []


def write_later(outcomes: Sequence[Outcome]) -> Callable[[], list[bool]]:
    """:func:`write`, the successes' UPDATE sent with the transaction's next round trip.

    Call what it returns before the transaction ends: it tells, per unrecorded outcome,
    whether the fence let it through (as :func:`write` returns). The other outcomes are
    written at once, as :func:`write` writes them.
    """
    todo = [outcome for outcome in outcomes if not outcome.recorded]
    successes = [outcome for outcome in todo if outcome.ending.transition is SUCCEED]
    others = {
        id(outcome): _transition(outcome)
        for outcome in todo
        if outcome.ending.transition is not SUCCEED
    }
    finish = transitions.succeed_many_later(
        [outcome.job for outcome in successes], [outcome.return_value for outcome in successes]
    )

    def written() -> list[bool]:
        won = dict(zip((id(o) for o in successes), finish(), strict=True)) | others
        return [won[id(outcome)] for outcome in todo]

    return written


def write_each(outcomes: Sequence[Outcome], using: str, limit: int) -> list[bool]:
    """Write the unrecorded outcomes one transaction each, after their batch was too large.

    A statement the server refused for its size (max_allowed_packet) belongs to the rows it
    carried, not to the server: written alone, each row that fits is recorded, and a result
    that still does not fit fails its job with ResultTooLarge (``limit``: the bound in force,
    for the message). So one outcome cannot hold the others. Returns what :func:`write` does.
    """
    logger.warning(
        "a batch of outcomes was too large for one statement, recorded one by one jobs=%s",
        len(outcomes),
    )
    _drop_connection(using)  # the server closes a connection after a packet too large
    return [_write_alone(outcome, using, limit) for outcome in outcomes if not outcome.recorded]


def _write_alone(outcome: Outcome, using: str, limit: int) -> bool:
    def one() -> bool:
        with short_transaction(using):
            return write([outcome])[0]

    try:
        return retry_whole_transaction(using, one)
    except DatabaseError as error:
        if not is_too_large(error) or outcome.ending.transition is not SUCCEED:
            raise
    _drop_connection(using)
    _fail_as_too_large(outcome, limit)
    return retry_whole_transaction(using, one)


def _fail_as_too_large(outcome: Outcome, limit: int) -> None:
    """Turn a success whose result no statement can carry into a failure, not retried."""
    size = len(json.dumps(outcome.return_value))
    message = too_large_message(size, limit)
    outcome.fail(message_record(ResultTooLarge, message), ResultTooLarge(message))


def _drop_connection(using: str) -> None:
    with contextlib.suppress(DatabaseError):  # already gone
        connections[using].close()


def settle(outcomes: Sequence[Outcome], written: Sequence[bool]) -> None:
    """Mark outcomes recorded after their transaction committed (``written`` from write())."""
    todo = [outcome for outcome in outcomes if not outcome.recorded]
    for outcome, ok in zip(todo, written, strict=True):
        outcome.recorded = True
        outcome.lost = not ok


def made_ready(outcomes: Sequence[Outcome]) -> set[str]:
    """Return the queues where a recorded outcome made its job ready again at once.

    A retry at once that waits blocked for its key's admission (21) is not one: the
    admission, when it makes the job ready, wakes its queue itself.
    """
    return {
        outcome.job.queue_name
        for outcome in outcomes
        if outcome.ending.status == JobStatus.READY and not outcome.lost
    }


def already_written(rejected: Sequence[Outcome]) -> list[bool]:
    """Tell, for outcomes the fence rejected, which the row already holds as written by us.

    After a connection broke during COMMIT, the commit may have happened: retrying the write
    then meets a row that is no longer claimed. It is ours if it holds this very outcome at
    this attempt (a success keeps its owner; a failure ends with our error record), and not
    another worker's or the reaper's (which records LeaseExpired).
    """
    if not rejected:
        return []
    using = rejected[0].job._state.db or "default"
    successes = [o.job for o in rejected if o.ending.transition is SUCCEED]
    committed = committed_successes(successes, using) if successes else {}
    others = [o.job.pk for o in rejected if o.ending.transition is not SUCCEED]
    fields = ("pk", "status", "attempts", "errors", "worker_ids")
    rows = Job.objects.using(using).filter(pk__in=others).values(*fields) if others else []
    by_id = {row["pk"]: row for row in rows}
    return [
        outcome.job.pk in committed
        if outcome.ending.transition is SUCCEED
        else _is_ours(outcome, by_id.get(outcome.job.pk))
        for outcome in rejected
    ]


def _is_ours(outcome: Outcome, row: dict[str, Any] | None) -> bool:
    """Tell whether the row holds this failed attempt's end, written by us."""
    job = outcome.job
    if outcome.ending.transition in (SNOOZE, RELEASE):  # the attempt given back: not told apart
        return False
    if row is None or row["attempts"] != job.attempts or row["status"] == JobStatus.CLAIMED:
        return False
    errors = row["errors"] or []
    workers = row["worker_ids"] or []
    return bool(errors and errors[-1] == outcome.error and workers[-1:] == [job.owner])


def _transitions(todo: Sequence[Outcome]) -> list[bool]:
    """Apply every outcome's fenced transition; all the successes in one UPDATE."""
    successes = [outcome for outcome in todo if outcome.ending.transition is SUCCEED]
    written = transitions.succeed_many(
        [outcome.job for outcome in successes], [outcome.return_value for outcome in successes]
    )
    won = {id(outcome): ok for outcome, ok in zip(successes, written, strict=True)}
    return [won[id(outcome)] if id(outcome) in won else _transition(outcome) for outcome in todo]


def _transition(outcome: Outcome) -> bool:
    ending = outcome.ending
    if ending.transition is SUCCEED:
        return transitions.succeed(outcome.job, outcome.return_value)
    if ending.transition is SNOOZE:
        return transitions.snooze(outcome.job, ending.delay or 0.0)
    if ending.transition is RELEASE:  # never started: its attempt is given back
        return transitions.release(outcome.job)
    return transitions.end_attempt(outcome.job, outcome.error or {}, ending)


def finished_result(outcome: Outcome, backend_alias: str) -> TaskResult | None:
    """Return the TaskResult after a recorded outcome (for ``task_finished``), if it resolves.

    An attempt that started has its TaskResult already (the one ``task_started`` carried): it
    is brought up to date in place, as Django's ImmediateBackend does, rather than built
    again. An attempt that never started (cancelled first, or its task path names no task)
    gets a new one.
    """
    job = _as_recorded(outcome)
    if outcome.running.result is not None:
        return update_result(outcome.running.result, job)
    try:
        task = resolve_task(job.task_path)
    except Exception:
        return None
    return build_result(job, task_for_job(task, job), backend_alias)


def _as_recorded(outcome: Outcome) -> Job:
    """Update the in-memory job the way its fenced transition updated the row."""
    job = outcome.job
    ending = outcome.ending
    job.status = ending.status
    if ending.transition is SNOOZE:
        job.snoozes += 1
        return job
    job.worker_ids = [*job.worker_ids, job.owner]
    if outcome.error is not None:
        job.errors = [*job.errors, outcome.error]
    if not ending.retried:
        job.finished_at = timezone.now()
        job.return_value = outcome.return_value
    return job


def give_back(jobs: Sequence[Job], using: str) -> int:
    """Give held jobs back to the queue without spending their attempt (8); return how many."""
    if not jobs:
        return 0

    def batch() -> int:
        with transaction.atomic(using=using):
            wakeup.after_commit(using, {job.queue_name for job in jobs})
            return sum(transitions.release(job) for job in jobs)

    return retry_whole_transaction(using, batch)


#: The old name of :func:`give_back`.
release = give_back


def interrupt(jobs: Sequence[Job], using: str, reason: str) -> int:
    """Record the running attempts a stopping worker cuts short; return how many."""
    if not jobs:
        return 0

    def batch() -> int:
        with transaction.atomic(using=using):
            wakeup.after_commit(using, {job.queue_name for job in jobs})
            return sum(transitions.interrupt(job, _stopped(job, reason)) for job in jobs)

    return retry_whole_transaction(using, batch)


def _stopped(job: Job, reason: str) -> dict[str, str]:
    return message_record(
        WorkerStopped,
        f"Worker {job.owner} stopped ({reason}) during attempt {job.attempts}.",
    )


def log_outcome(outcome: Outcome, owner: str) -> None:
    """Write the one key=value line of a finished attempt."""
    job = outcome.job
    status = "lost" if outcome.lost else outcome.status
    extra = ""
    if outcome.error and not outcome.lost:
        extra += " error=" + outcome.error["exception_class_path"]
    if outcome.ending.delay is not None and not outcome.lost:
        extra += f" retry_in={outcome.ending.delay:.2f}"
    level = logging.WARNING if outcome.lost or outcome.status == JobStatus.FAILED else logging.INFO
    job_logger.log(
        level,
        "job=%s task=%s queue=%s attempt=%s status=%s duration_ms=%.1f worker=%s%s",
        job.pk,
        job.task_path,
        job.queue_name,
        job.attempts,
        status,
        outcome.duration * 1000,
        owner,
        extra,
    )


def send_finished(outcome: Outcome, backend_alias: str) -> None:
    """Send ``task_finished`` for a recorded attempt; a failing receiver is logged, not fatal.

    The sender is the configured backend's class. For an attempt that raised, the signal is
    sent while its exception is being handled, as Django's backends do: receivers (Django's
    own logs the failure) find it in ``sys.exc_info()``.
    """
    result = finished_result(outcome, backend_alias)
    if result is None:
        return
    sender = backend_class(backend_alias)
    if outcome.exception is None:
        _log_failed_receivers(task_finished.send_robust(sender, task_result=result))
        return
    try:
        raise outcome.exception
    except BaseException:
        _log_failed_receivers(task_finished.send_robust(sender, task_result=result))


def _log_failed_receivers(responses: Sequence[tuple[Any, Any]]) -> None:
    for receiver, response in responses:
        if isinstance(response, Exception):
            job_logger.error("task_finished receiver %r failed: %r", receiver, response)
