"""``@task`` with this backend's options on every supported Django.

Django 6.1's ``django.tasks.task`` and the backport's ``django_tasks.task`` pass extra keywords
(``max_attempts=3``) to the task class of the task's backend; Django 6.0's accepts only its own
arguments. This decorator does what 6.1's does on each version, so a task module written once
runs on Django 5.2, 6.0 and 6.1. It is importable as ``django_skipqueue.tasks.task``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from django_skipqueue.compat import (
    DEFAULT_TASK_BACKEND_ALIAS,
    DEFAULT_TASK_PRIORITY,
    DEFAULT_TASK_QUEUE_NAME,
    Task,
    task_backends,
)


@overload
def task(
    function: Callable[..., Any],
    *,
    priority: int = ...,
    queue_name: str = ...,
    backend: str = ...,
    takes_context: bool = ...,
    **options: Any,
) -> Task: ...


@overload
def task(
    function: None = None,
    *,
    priority: int = ...,
    queue_name: str = ...,
    backend: str = ...,
    takes_context: bool = ...,
    **options: Any,
) -> Callable[[Callable[..., Any]], Task]: ...


def task(
    function: Callable[..., Any] | None = None,
    *,
    priority: int = DEFAULT_TASK_PRIORITY,
    queue_name: str = DEFAULT_TASK_QUEUE_NAME,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
    takes_context: bool = False,
    **options: Any,
) -> Task | Callable[[Callable[..., Any]], Task]:
    """Declare a task, as ``django.tasks.task`` does on Django 6.1.

    ``options`` are this backend's task options (``max_attempts``, ``timeout``, ...): the
    backend's task class receives them, so they exist while the task's backend is a
    ``SkipQueueBackend`` (or a backend whose ``task_class`` is ``SkipQueueTask``); another
    task class refuses them with a ``TypeError``, as Django's decorator would.
    """
    if "run_after" in options:
        raise TypeError(
            "run_after cannot be defined statically with the @task decorator. "
            "Use .using(run_after=...) to set it dynamically."
        )

    def wrapper(func: Callable[..., Any]) -> Task:
        task_class: type[Task] = task_backends[backend].task_class
        return task_class(
            func=func,
            priority=priority,
            queue_name=queue_name,
            backend=backend,
            takes_context=takes_context,
            run_after=None,
            **options,
        )

    if function is not None:
        return wrapper(function)
    return wrapper
