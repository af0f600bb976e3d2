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
from django.db.models import Q, QuerySet

from django_skipqueue import transitions, wakeup
from django_skipqueue.exceptions import JobCancelled, message_record
from django_skipqueue.models import FINISHED_STATUSES, Job, JobStatus
from django_skipqueue.states import CANCELLABLE_STATUSES

#: Jobs changed per transaction: small enough that no lock is held for long.
CHUNK = 500
#: What is read of each changed job for its log entry: never the JSON payloads.
LABEL_FIELDS = ("pk", "task_path", "queue_name", "status", "batch_id", "flow_key", "flow_slot")

FAILED = Q(status=JobStatus.FAILED)
WAITING = Q(status__in=CANCELLABLE_STATUSES)
RUNNING = Q(status=JobStatus.CLAIMED, cancel_requested=False)
FINISHED = Q(status__in=FINISHED_STATUSES)

JobQuery = QuerySet[Job, Job]
#: Called inside each chunk's transaction with the jobs it changed (as they now are).
Recorder = Callable[[list[Job]], None]


@dataclass
class Report:
    """What an operation changed, and which jobs it refused and why."""

    changed: int = 0
    #: Failed jobs left failed because another live job holds their idempotency key.
    key_conflicts: list[int] = field(default_factory=list)


#: Changes one chunk (rows: the chunk's ids with the guard) and returns the jobs it changed.
Change = Callable[[JobQuery, Report], list[Job]]


def retry_failed(queryset: JobQuery, record: Recorder) -> Report:
    """Move the failed jobs of ``queryset`` back to ready, one more attempt each; wake workers."""

    def record_and_wake(jobs: list[Job]) -> None:
        record(jobs)
        wakeup.after_commit(queryset.db, {job.queue_name for job in jobs})

    return _in_chunks(queryset, FAILED, _retry, record_and_wake)


def cancel_waiting(queryset: JobQuery, record: Recorder, note: str) -> Report:
    """Cancel the waiting jobs of ``queryset`` (ready, scheduled, blocked); ``note`` says why."""
    error = message_record(JobCancelled, note)

    def cancel(rows: JobQuery, report: Report) -> list[Job]:
        jobs = _lock(rows, "errors")
        for job in jobs:
            job.errors = [*job.errors, error]
            transitions.cancel_waiting(rows.filter(pk=job.pk), job.errors, job)
            job.status = JobStatus.CANCELLED
        return jobs

    return _in_chunks(queryset, WAITING, cancel, record)


def request_cancellation(queryset: JobQuery, record: Recorder) -> Report:
    """Ask the workers running the claimed jobs of ``queryset`` to stop them."""

    def flag(rows: JobQuery, report: Report) -> list[Job]:
        jobs = _lock(rows)
        transitions.request_cancel(_only(rows, jobs))
        for job in jobs:
            job.cancel_requested = True
        return jobs

    return _in_chunks(queryset, RUNNING, flag, record)


def delete_finished(queryset: JobQuery, record: Recorder) -> Report:
    """Delete the succeeded, failed and cancelled jobs of ``queryset``."""

    def delete(rows: JobQuery, report: Report) -> list[Job]:
        jobs = _lock(rows)
        _only(rows, jobs).delete()
        return jobs

    return _in_chunks(queryset, FINISHED, delete, record)


def _retry(rows: JobQuery, report: Report) -> list[Job]:
    """Retry a chunk in one UPDATE, or one by one if an idempotency key is taken."""
    jobs = _lock(rows)
    try:
        with transaction.atomic(using=rows.db):
            transitions.retry_failed(_only(rows, jobs), jobs)
    except IntegrityError:
        jobs = [job for job in jobs if _retry_one(rows, job, report)]
    for job in jobs:
        job.status = JobStatus.READY
    return jobs


def _retry_one(rows: JobQuery, job: Job, report: Report) -> bool:
    try:
        with transaction.atomic(using=rows.db):
            transitions.retry_failed(rows.filter(pk=job.pk), [job])
    except IntegrityError:
        report.key_conflicts.append(job.pk)
        return False
    return True


def _in_chunks(queryset: JobQuery, guard: Q, change: Change, record: Recorder) -> Report:
    """Apply ``change`` to the jobs of ``queryset`` that pass ``guard``, chunk by chunk."""
    using = queryset.db
    candidates = queryset.filter(guard).order_by("-pk").values_list("pk", flat=True)
    report = Report()
    below = None
    while True:
        page = candidates if below is None else candidates.filter(pk__lt=below)
        ids = list(page[:CHUNK])
        if not ids:
            return report
        with transaction.atomic(using=using):
            jobs = change(Job.objects.using(using).filter(guard, pk__in=ids), report)
            report.changed += len(jobs)
            if jobs:
                record(jobs)
        below = ids[-1]


def _lock(rows: JobQuery, *extra: str) -> list[Job]:
    """Lock the rows that still pass the guard, by primary key, and read their labels."""
    return list(rows.select_for_update().only(*LABEL_FIELDS, *extra).order_by("-pk"))


def _only(rows: JobQuery, jobs: list[Job]) -> JobQuery:
    """Narrow ``rows`` (guard included) to the jobs locked: a statement repeats the guard."""
    return rows.filter(pk__in=[job.pk for job in jobs])
