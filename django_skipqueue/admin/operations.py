"""State-guarded changes the admin makes to jobs: retry, cancel, request cancellation, delete.

Each change runs in chunks, one short transaction per chunk: candidate ids are read without
locks (newest first), then locked by primary key with the state guard repeated, then changed
by a statement that repeats the guard once more. A job that moved on in between (claimed by a
worker, finished, retried by another operator) fails the guard and is neither changed nor
reported. Nothing here writes status, owner or lease any other way, so the admin cannot put
a job into a state the queue does not know.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Greatest

from django_skipqueue import wakeup
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.exceptions import JobCancelled
from django_skipqueue.models import FINISHED_STATUSES, Job, JobStatus

#: Jobs changed per transaction: small enough that no lock is held for long.
CHUNK = 500
#: What is read of each changed job for its log entry: never the JSON payloads.
LABEL_FIELDS = ("pk", "task_path", "queue_name", "status")

FAILED = Q(status=JobStatus.FAILED)
WAITING = Q(status__in=(JobStatus.READY, JobStatus.SCHEDULED))
RUNNING = Q(status=JobStatus.CLAIMED, cancel_requested=False)
FINISHED = Q(status__in=FINISHED_STATUSES)

#: How a retried job starts again. The attempt counter is kept, because it is part of the
#: lease fence and numbers the stored errors; the job gets one attempt more than it has spent
#: instead (or keeps its unspent ones, if it failed early on an error that is not retried).
RETRY_FIELDS = {
    "status": JobStatus.READY,
    "owner": None,
    "lease_until": None,
    "run_after": None,
    "finished_at": None,
    "cancel_requested": False,
    "max_attempts": Greatest(F("max_attempts"), F("attempts") + 1),
}

JobQuery = QuerySet[Job, Job]
#: Called inside each chunk's transaction with the jobs it changed (as they now are).
Recorder = Callable[[list[Job]], None]


@dataclass
class Outcome:
    """What an operation changed, and which jobs it refused and why."""

    changed: int = 0
    #: Failed jobs left failed because another live job holds their idempotency key.
    key_conflicts: list[int] = field(default_factory=list)


#: Changes one chunk (rows: the chunk's ids with the guard) and returns the jobs it changed.
Change = Callable[[JobQuery, Outcome], list[Job]]


def retry_failed(queryset: JobQuery, record: Recorder) -> Outcome:
    """Move the failed jobs of ``queryset`` back to ready (see RETRY_FIELDS), and wake workers."""

    def record_and_wake(jobs: list[Job]) -> None:
        record(jobs)
        wakeup.after_commit(queryset.db, {job.queue_name for job in jobs})

    return _in_chunks(queryset, FAILED, _retry, record_and_wake)


def cancel_waiting(queryset: JobQuery, record: Recorder, note: str) -> Outcome:
    """Cancel the ready and scheduled jobs of ``queryset``; ``note`` becomes their last error."""
    path = f"{JobCancelled.__module__}.{JobCancelled.__qualname__}"
    error = {"exception_class_path": path, "traceback": f"{path}: {note}\n"}

    def cancel(rows: JobQuery, outcome: Outcome) -> list[Job]:
        jobs = _lock(rows, "errors")
        for job in jobs:
            job.errors = [*job.errors, error]
            rows.filter(pk=job.pk).update(
                status=JobStatus.CANCELLED, finished_at=DatabaseNow(), errors=job.errors
            )
            job.status = JobStatus.CANCELLED
        return jobs

    return _in_chunks(queryset, WAITING, cancel, record)


def request_cancellation(queryset: JobQuery, record: Recorder) -> Outcome:
    """Ask the workers running the claimed jobs of ``queryset`` to stop them."""

    def flag(rows: JobQuery, outcome: Outcome) -> list[Job]:
        jobs = _lock(rows)
        _only(rows, jobs).update(cancel_requested=True)
        for job in jobs:
            job.cancel_requested = True
        return jobs

    return _in_chunks(queryset, RUNNING, flag, record)


def delete_finished(queryset: JobQuery, record: Recorder) -> Outcome:
    """Delete the succeeded, failed and cancelled jobs of ``queryset``."""

    def delete(rows: JobQuery, outcome: Outcome) -> list[Job]:
        jobs = _lock(rows)
        _only(rows, jobs).delete()
        return jobs

    return _in_chunks(queryset, FINISHED, delete, record)


def _retry(rows: JobQuery, outcome: Outcome) -> list[Job]:
    """Retry a chunk in one UPDATE, or one by one if an idempotency key is taken."""
    jobs = _lock(rows)
    try:
        with transaction.atomic(using=rows.db):
            _only(rows, jobs).update(**RETRY_FIELDS)
    except IntegrityError:
        jobs = [job for job in jobs if _retry_one(rows, job, outcome)]
    for job in jobs:
        job.status = JobStatus.READY
    return jobs


def _retry_one(rows: JobQuery, job: Job, outcome: Outcome) -> bool:
    try:
        with transaction.atomic(using=rows.db):
            rows.filter(pk=job.pk).update(**RETRY_FIELDS)
    except IntegrityError:
        outcome.key_conflicts.append(job.pk)
        return False
    return True


def _in_chunks(queryset: JobQuery, guard: Q, change: Change, record: Recorder) -> Outcome:
    """Apply ``change`` to the jobs of ``queryset`` that pass ``guard``, chunk by chunk."""
    using = queryset.db
    candidates = queryset.filter(guard).order_by("-pk").values_list("pk", flat=True)
    outcome, below = Outcome(), None
    while True:
        page = candidates if below is None else candidates.filter(pk__lt=below)
        ids = list(page[:CHUNK])
        if not ids:
            return outcome
        with transaction.atomic(using=using):
            jobs = change(Job.objects.using(using).filter(guard, pk__in=ids), outcome)
            outcome.changed += len(jobs)
            if jobs:
                record(jobs)
        below = ids[-1]


def _lock(rows: JobQuery, *extra: str) -> list[Job]:
    """Lock the rows that still pass the guard, by primary key, and read their labels."""
    return list(rows.select_for_update().only(*LABEL_FIELDS, *extra).order_by("-pk"))


def _only(rows: JobQuery, jobs: list[Job]) -> JobQuery:
    """Narrow ``rows`` (guard included) to the jobs locked: a statement repeats the guard."""
    return rows.filter(pk__in=[job.pk for job in jobs])
