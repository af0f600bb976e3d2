"""Turn a task call into a job row and insert it on the caller's connection and transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.tasks import Task
from django.utils import timezone

from .bulkinsert import insert_rows
from .conf import SkipQueueSettings, get_settings
from .dbretry import retry_whole_transaction
from .models import Job, JobStatus
from .payload import check_size, normalize_arguments

#: Rows per multi-row INSERT in a bulk enqueue.
BULK_BATCH_SIZE = 1000


def build_job(
    task: Task,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    config: SkipQueueSettings | None = None,
    now: datetime | None = None,
) -> Job:
    """Return an unsaved Job for this call, or raise InvalidPayload.

    A bulk enqueue passes one ``config`` and one ``now`` for all its jobs: reading the
    settings cost more than the rest of this function, and one bulk is one instant.
    """
    config = config or get_settings()
    json_args, json_kwargs = normalize_arguments(args, kwargs)
    check_size(json_args, json_kwargs, config.MAX_PAYLOAD_BYTES)
    now = now or timezone.now()
    deferred = task.run_after is not None and task.run_after > now
    return Job(
        queue_name=task.queue_name,
        priority=task.priority,
        status=JobStatus.SCHEDULED if deferred else JobStatus.READY,
        run_after=task.run_after,
        task_path=task.module_path,
        args=json_args,
        kwargs=json_kwargs,
        max_attempts=_option(task, "max_attempts", config.MAX_ATTEMPTS),
        lease_seconds=_option(task, "lease", int(config.LEASE_SECONDS)),
        timeout_seconds=getattr(task, "timeout", None),
        idempotency_key=getattr(task, "idempotency_key", None),
        enqueued_at=now,
    )


def _option(task: Task, name: str, default: Any) -> Any:
    value = getattr(task, name, None)
    return default if value is None else value


def insert_job(job: Job, using: str) -> tuple[Job, bool]:
    """Insert ``job``; with an idempotency key, return the live job holding it instead.

    Returns the job and whether it was created. The unique index on the active key makes
    this race-free: a concurrent insert of the same key waits for the first one's
    transaction, then fails with a duplicate key, and the existing row is read back.
    """
    if job.idempotency_key is None:
        job.save(using=using, force_insert=True)
        return job, True
    return retry_whole_transaction(using, lambda: _insert_keyed(job, using))


def _insert_keyed(job: Job, using: str) -> tuple[Job, bool]:
    for _ in range(5):
        try:
            with transaction.atomic(using=using):
                job.save(using=using, force_insert=True)
            return job, True
        except IntegrityError:
            job.pk = None
            existing = Job.objects.using(using).filter(active_key=job.idempotency_key).first()
            if existing is not None:
                return existing, False
            # The holder finished (failed or cancelled) meanwhile: the key is free again.
    raise IntegrityError(f"Could not insert or find a job with key {job.idempotency_key!r}.")


def insert_jobs(jobs: list[Job], using: str) -> list[Job]:
    """Insert many jobs with multi-row INSERTs, setting each job's primary key."""
    if connections[using].vendor != "mysql":
        return Job.objects.using(using).bulk_create(jobs, batch_size=BULK_BATCH_SIZE)
    with transaction.atomic(using=using):
        for start in range(0, len(jobs), BULK_BATCH_SIZE):
            insert_rows(jobs[start : start + BULK_BATCH_SIZE], using)
    return jobs
