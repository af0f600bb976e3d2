"""Fenced transitions out of CLAIMED: one UPDATE guarded by id, owner and attempt.

If the UPDATE matches no row the lease was lost (reaped, or taken over after it expired):
the caller changes nothing and counts it. Django's MySQL backend sets CLIENT.FOUND_ROWS,
so ``update()`` returns rows *matched*, which is what the fence needs.
"""

from __future__ import annotations

from typing import Any

from django_skipqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_skipqueue.managers import CLAIMED, READY, SCHEDULED, JobQuerySet, released_fields
from django_skipqueue.models import Job, JobStatus


def fenced(job: Job) -> JobQuerySet:
    """Return a queryset matching ``job`` only while its holder still owns this attempt."""
    return Job.objects.using(job._state.db or "default").filter(
        pk=job.pk, owner=job.owner, attempts=job.attempts, status=CLAIMED
    )


def succeed(job: Job, return_value: Any) -> bool:
    """Record success; return False if the lease was lost."""
    return _apply(job, status=JobStatus.SUCCEEDED, return_value=return_value, **_closing(job))


def fail(job: Job, error: dict[str, str], *, retry_in: float | None) -> bool:
    """Record a failed attempt, scheduling a retry in ``retry_in`` seconds if given."""
    fields: dict[str, Any] = {"errors": [*job.errors, error], **_after_attempt(job)}
    if retry_in is None:
        fields.update(status=JobStatus.FAILED, finished_at=DatabaseNow())
    elif retry_in <= 0:
        fields.update(status=READY, owner=None)
    else:
        fields.update(status=SCHEDULED, owner=None, run_after=DatabaseNowPlus(retry_in))
    return _apply(job, **fields)


def cancel_running(job: Job, error: dict[str, str]) -> bool:
    """Record that a running job stopped because its cancellation was requested."""
    return _apply(job, status=JobStatus.CANCELLED, errors=[*job.errors, error], **_closing(job))


def release(job: Job) -> bool:
    """Give a claimed job that never started back to the queue without spending an attempt."""
    return _apply(job, **released_fields())


def interrupt(job: Job, error: dict[str, str]) -> bool:
    """Give back a job whose attempt began but was cut short by its worker's stop.

    The attempt counts: its error and worker id are added, and ``started_at`` and
    ``attempts`` stay. The job is ready again at once, with one more attempt if that was its
    last: the stop was the worker's, not the job's.
    """
    return _apply(
        job,
        status=READY,
        owner=None,
        errors=[*job.errors, error],
        max_attempts=max(job.max_attempts, job.attempts + 1),
        **_after_attempt(job),
    )


def _after_attempt(job: Job) -> dict[str, Any]:
    return {"worker_ids": [*job.worker_ids, job.owner], "lease_until": None}


def _closing(job: Job) -> dict[str, Any]:
    return {**_after_attempt(job), "finished_at": DatabaseNow()}


def _apply(job: Job, **fields: Any) -> bool:
    return fenced(job).update(**fields) == 1
