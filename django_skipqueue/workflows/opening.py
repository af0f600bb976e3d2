"""Open a batch: the jobs enqueued inside the block join it, in one transaction with its size.

The batch row, its jobs, their member rows and the batch's new size commit together, so no job
of the batch can end before the batch knows how many it has: a batch is done when its ended
count reaches its size, and that can only be true once the block has committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from django_skipqueue.apps import require_installed
from django_skipqueue.compat import DEFAULT_TASK_BACKEND_ALIAS, Task
from django_skipqueue.context import resolve_task
from django_skipqueue.enqueue import open_batch
from django_skipqueue.exceptions import BatchFinished
from django_skipqueue.models import Job
from django_skipqueue.payload import normalize_arguments
from django_skipqueue.queues import queue_database
from django_skipqueue.workflows import counting
from django_skipqueue.workflows.models import Batch, Kind, Member

#: A callback or a step: a Task, or the dotted path of one.
TaskLike = Task | str


@dataclass
class OpenBatch:
    """The batch a ``with`` block fills: its id, the database, the members added so far."""

    batch_id: int
    using: str
    job_ids: list[int] = field(default_factory=list)
    #: Nested batches and chains opened inside the block, each one member.
    nested: int = 0

    @property
    def id(self) -> int:
        return self.batch_id

    @property
    def size(self) -> int:
        """Members added by this block (jobs and nested batches)."""
        return len(self.job_ids) + self.nested

    def add(self, jobs: Sequence[Job]) -> None:
        """Note new jobs of this batch (called by the backend after their INSERT)."""
        self.job_ids.extend(int(job.pk) for job in jobs)

    def close(self) -> int:
        """Write the member rows and add them to the batch's size; return the rows matched.

        Zero rows matched: the batch finished meanwhile (only possible when extending one).
        """
        members = [Member(job_id=pk, batch_id=self.batch_id) for pk in self.job_ids]
        Member.objects.using(self.using).bulk_create(members, batch_size=1000)
        rows = Batch.objects.using(self.using).filter(pk=self.batch_id, finished_at=None)
        return rows.update(size=F("size") + self.size)


def task_path(task: TaskLike | None, using: str | None = None) -> str:
    """The stored path of a callback or step, checked now rather than when it must run."""
    if task is None:
        return ""
    # Stored as a path and resolved when due: the task's own options apply then.
    resolved = resolve_task(task if isinstance(task, str) else task.module_path)
    path = resolved.module_path
    if using is not None and queue_database(resolved.backend) != using:
        raise ValueError(f"Task {path} keeps its jobs in another database than the batch.")
    return path


def database_of(backend: str) -> str:
    """The database of ``backend``'s jobs; refuses a batch or chain without the app installed
    (its jobs would never be counted, its callbacks never fire)."""
    require_installed("django_skipqueue.workflows", "A batch or chain")
    return queue_database(backend)


def callbacks(using: str, **given: TaskLike | None) -> dict[str, str]:
    """The callbacks' task paths by field, each checked."""
    return {name: task_path(task, using) for name, task in given.items()}


def json_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    return normalize_arguments((), kwargs or {})[1]


def parent_of(using: str) -> OpenBatch | None:
    """The batch open around this one in this context, if any (this one nests in it)."""
    parent = open_batch.get()
    if parent is not None and parent.using != using:
        raise ValueError("A nested batch must live in the database of its parent.")
    return parent  # type: ignore[return-value]


@contextmanager
def batch(
    on_success: TaskLike | None = None,
    on_finish: TaskLike | None = None,
    on_failure: TaskLike | None = None,
    *,
    callback_kwargs: dict[str, Any] | None = None,
    description: str = "",
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
) -> Iterator[OpenBatch]:
    """Open a batch: every job enqueued in the block joins it; callbacks fire when it is done.

    ``on_success`` runs once every member succeeded, ``on_finish`` once every member ended,
    ``on_failure`` once a first member failed for good; each gets the batch id, then
    ``callback_kwargs``. A batch opened inside another (or inside :func:`extend`) is one
    member of it. The block is one transaction on the backend's database.
    """
    using = database_of(backend)
    fields = callbacks(using, on_success=on_success, on_finish=on_finish, on_failure=on_failure)
    kwargs = json_kwargs(callback_kwargs)
    with transaction.atomic(using=using):
        parent = parent_of(using)
        row = Batch.objects.using(using).create(
            kind=Kind.BATCH,
            description=description,
            callback_kwargs=kwargs,
            parent_id=parent.batch_id if parent else None,
            created_at=timezone.now(),
            **fields,
        )
        opened = OpenBatch(row.pk, using)
        token = open_batch.set(opened)
        try:
            yield opened
        finally:
            open_batch.reset(token)
        opened.close()
        if not opened.size:
            counting.settle_now(using, row.pk)  # nothing to wait for: done at once
        if parent is not None:
            parent.nested += 1


@contextmanager
def extend(batch_id: int, *, backend: str = DEFAULT_TASK_BACKEND_ALIAS) -> Iterator[OpenBatch]:
    """Add the jobs enqueued in the block to batch ``batch_id``, which must not be finished.

    A job of the batch may extend it while it runs: the batch cannot finish before that job
    ends, and the block commits first. Raises BatchFinished (and rolls the block back) when
    the batch finished before the block committed.
    """
    using = database_of(backend)
    with transaction.atomic(using=using):
        row = Batch.objects.using(using).filter(pk=batch_id).first()
        if row is None or row.kind != Kind.BATCH:
            raise ValueError(f"There is no batch {batch_id} to extend.")
        if row.finished_at is not None:
            raise _finished(batch_id)
        opened = OpenBatch(batch_id, using)
        token = open_batch.set(opened)
        try:
            yield opened
        finally:
            open_batch.reset(token)
        if not opened.close():
            raise _finished(batch_id)


def _finished(batch_id: int) -> BatchFinished:
    return BatchFinished(
        f"Batch {batch_id} has finished: its callbacks are enqueued, it takes no more jobs."
    )
