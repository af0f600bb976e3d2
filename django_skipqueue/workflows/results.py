"""What a callback sees of its batch: counts, member ids, failed jobs' errors, return values."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django_skipqueue.compat import DEFAULT_TASK_BACKEND_ALIAS
from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus
from django_skipqueue.workflows.models import Batch
from django_skipqueue.workflows.opening import database_of


@dataclass(frozen=True)
class Failure:
    """A member job that failed for good, with the error of its last attempt."""

    job_id: int
    task_path: str
    error: dict[str, Any] | None


@dataclass(frozen=True)
class BatchResult:
    id: int
    kind: str
    description: str
    size: int
    succeeded: int
    failed: int
    cancelled: int
    finished_at: datetime | None
    #: The member jobs, in enqueue order (a chain: the steps enqueued so far).
    job_ids: list[int]
    #: Nested batches and chains, each one member.
    batch_ids: list[int]
    failures: list[Failure]
    #: Return values by job id, when asked for; a job not succeeded (yet) has none.
    return_values: dict[int, Any] | None = field(default=None)

    @property
    def is_finished(self) -> bool:
        return self.finished_at is not None


def batch_result(
    batch_id: int, *, return_values: bool = False, backend: str = DEFAULT_TASK_BACKEND_ALIAS
) -> BatchResult:
    """Read batch ``batch_id``: counters, members and failures; return values if asked.

    Member jobs are read by primary key: a job already purged (see SKIPQUEUE_PURGE_RETENTION)
    shows in ``job_ids`` but no more in ``failures`` or ``return_values``.
    """
    using = database_of(backend)
    row = Batch.objects.using(using).get(pk=batch_id)
    job_ids = sorted(row.members.values_list("job_id", flat=True))
    jobs = Job.objects.using(using).filter(pk__in=row.members.values("job_id"))
    failed = jobs.filter(status=JobStatus.FAILED).order_by("pk")
    values = None
    if return_values:
        done = jobs.filter(status=JobStatus.SUCCEEDED).order_by("pk")
        values = dict(done.values_list("pk", "return_value"))
    return BatchResult(
        id=row.pk,
        kind=row.kind,
        description=row.description,
        size=row.size,
        succeeded=row.succeeded,
        failed=row.failed,
        cancelled=row.cancelled,
        finished_at=row.finished_at,
        job_ids=job_ids,
        batch_ids=sorted(row.children.values_list("pk", flat=True)),
        failures=[
            Failure(pk, path, errors[-1] if errors else None)
            for pk, path, errors in failed.values_list("pk", "task_path", "errors")
        ],
        return_values=values,
    )
