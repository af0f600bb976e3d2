"""Tasks used by the test suite (module-level, as django.tasks requires)."""

from __future__ import annotations

from django_skipqueue.compat import TaskContext
from django_skipqueue.tasks import task


@task
def noop() -> None:
    """Do nothing: measures the queue, not the task."""


@task(priority=10)
def echo(*args: object, **kwargs: object) -> dict[str, object]:
    return {"args": list(args), "kwargs": kwargs}


@task(max_attempts=1)
def explode(message: str) -> None:
    raise ValueError(message)


@task(takes_context=True)
def whoami(context: TaskContext) -> dict[str, object]:
    return {"id": context.task_result.id, "attempt": context.attempt}


@task
async def async_double(value: int) -> int:
    return value * 2


not_a_task = print
