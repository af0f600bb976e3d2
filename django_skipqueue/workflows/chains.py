"""Chains: steps run one after another, each given the previous step's return value.

A chain is a batch of kind CHAIN whose size is its number of steps. Only the first step is
enqueued at once; the steps still to come wait in the batch row. When a step succeeds, the
transaction that records its success enqueues the next one (``counting.py``), with the return
value as its first argument: the next step exists if and only if its predecessor committed.
A step that fails for good stops the chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from django_skipqueue.compat import DEFAULT_TASK_BACKEND_ALIAS
from django_skipqueue.context import resolve_task
from django_skipqueue.enqueue import open_batch
from django_skipqueue.payload import normalize_arguments
from django_skipqueue.workflows.models import Batch, Kind, Member
from django_skipqueue.workflows.opening import (
    OpenBatch,
    TaskLike,
    callbacks,
    database_of,
    json_kwargs,
    parent_of,
    task_path,
)


@dataclass(frozen=True)
class Step:
    """One step of a chain: a task and the arguments that come after the previous value."""

    task_path: str
    args: list[Any]
    kwargs: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"task_path": self.task_path, "args": self.args, "kwargs": self.kwargs}


def step(task: TaskLike, *args: Any, **kwargs: Any) -> Step:
    """A step of a chain; every step but the first gets the previous return value first."""
    json_args, json_key_args = normalize_arguments(args, kwargs)
    return Step(task_path(task), json_args, json_key_args)


def chain(
    *steps: Step,
    on_success: TaskLike | None = None,
    on_finish: TaskLike | None = None,
    on_failure: TaskLike | None = None,
    callback_kwargs: dict[str, Any] | None = None,
    description: str = "",
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
) -> Batch:
    """Enqueue the first step of a chain and keep the others for later; return the chain.

    The callbacks are a batch's: ``on_success`` after the last step succeeded, ``on_failure``
    when a step failed for good (the chain stops there), ``on_finish`` either way.
    """
    if not steps:
        raise ValueError("A chain needs at least one step.")
    using = database_of(backend)
    fields = callbacks(using, on_success=on_success, on_finish=on_finish, on_failure=on_failure)
    first, *rest = steps
    with transaction.atomic(using=using):
        parent = parent_of(using)
        row = Batch.objects.using(using).create(
            kind=Kind.CHAIN,
            description=description,
            size=len(steps),
            steps=[each.as_dict() for each in rest],
            callback_kwargs=json_kwargs(callback_kwargs),
            parent_id=parent.batch_id if parent else None,
            created_at=timezone.now(),
            **fields,
        )
        # Enqueued as the chain's member, through the backend (its signal and wake-up).
        opened = OpenBatch(row.pk, using)
        token = open_batch.set(opened)
        try:
            resolve_task(first.task_path).enqueue(*first.args, **first.kwargs)
        finally:
            open_batch.reset(token)
        Member.objects.using(using).bulk_create(
            [Member(job_id=pk, batch_id=row.pk) for pk in opened.job_ids]
        )
        if parent is not None:
            parent.nested += 1
    return row
