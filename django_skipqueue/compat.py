"""The Django Tasks API of the running Django: ``django.tasks`` on 6.x, the backport on 5.2.

Django 6.0 added ``django.tasks``; Django 5.2 LTS has it only through the ``django-tasks``
backport (the ``django_tasks`` module), whose classes have the same shape under a few other
names (``InvalidTaskError`` for ``InvalidTask``). Every module of this package, its tests and
its documentation samples import the Tasks API from here, so that one code base runs on each
supported Django. On Django 6.x the backport is never used, even when it is installed: tasks
declared with ``django.tasks.task`` are the ones Django's own handlers know.

What differs between the versions besides the names, and what this package does about it:

- ``@task(max_attempts=3)``: Django 6.1's ``task()`` and the backport's pass extra keywords to
  the backend's task class; Django 6.0's does not accept them. ``django_skipqueue.tasks.task``
  does the same on each (``TASK_DECORATOR_TAKES_OPTIONS`` says whether Django's own does).
- The backport connects its signal receivers and registers its system check when its app is
  ready; this package's app imports both modules itself, so ``"django_tasks"`` in
  ``INSTALLED_APPS`` is optional (see ``ensure_backport_loaded``).
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any

import django
from django.core.exceptions import ImproperlyConfigured

#: The oldest Django this package supports, and the oldest backport it runs on Django 5.2 with.
MINIMUM_DJANGO = (5, 2)
MINIMUM_BACKPORT = (0, 12)

#: True where ``django.tasks`` is part of Django (6.0 and later).
BUILTIN = django.VERSION >= (6, 0)

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

if TYPE_CHECKING or BUILTIN:
    from django.tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskBackendHandler,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task_backends,
    )
    from django.tasks import task as django_task
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        DEFAULT_TASK_PRIORITY,
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        TaskError,
    )
    from django.tasks.exceptions import (
        InvalidTask,
        InvalidTaskBackend,
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json

    #: The module whose names are imported here, and where the built-in backends live.
    TASKS_MODULE = "django.tasks"
else:
    try:
        from django_tasks import (
            DEFAULT_TASK_BACKEND_ALIAS,
            DEFAULT_TASK_QUEUE_NAME,
            TaskBackendHandler,
            TaskContext,
            TaskResult,
            TaskResultStatus,
            task_backends,
        )
        from django_tasks import task as django_task
    except ImportError as error:
        raise ImproperlyConfigured(
            f"django-skipqueue on Django {django.get_version()} needs the django-tasks "
            "backport (the django_tasks module), which Django 6.0 made part of Django: "
            "pip install 'django-tasks>=0.12' (installing django-skipqueue with its "
            "dependencies does), or upgrade to Django 6.0 or later."
        ) from error
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import (
        DEFAULT_TASK_PRIORITY,
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskError,
    )
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

    TASKS_MODULE = "django_tasks"

#: Dotted paths of the two backends Django ships, for settings and tests on every version.
DUMMY_BACKEND = f"{TASKS_MODULE}.backends.dummy.DummyBackend"
IMMEDIATE_BACKEND = f"{TASKS_MODULE}.backends.immediate.ImmediateBackend"

#: Whether Django's own ``@task`` (``django_task`` here) passes extra keywords, this backend's
#: options, to the backend's task class: Django 6.1 and the backport do, Django 6.0 does not.
#: Tasks of this package are declared with ``django_skipqueue.tasks.task``, which does on each.
TASK_DECORATOR_TAKES_OPTIONS = any(
    parameter.kind is inspect.Parameter.VAR_KEYWORD
    for parameter in inspect.signature(django_task).parameters.values()
)

__all__ = [
    "BUILTIN",
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_PRIORITY",
    "DEFAULT_TASK_QUEUE_NAME",
    "DUMMY_BACKEND",
    "IMMEDIATE_BACKEND",
    "MINIMUM_BACKPORT",
    "MINIMUM_DJANGO",
    "TASKS_MODULE",
    "TASK_DECORATOR_TAKES_OPTIONS",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "Task",
    "TaskBackendHandler",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "backport_version",
    "django_task",
    "ensure_backport_loaded",
    "fetch_returned_rows",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]


def backport_version() -> tuple[int, ...] | None:
    """The installed django-tasks backport's version, or None where it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("django-tasks")
    except PackageNotFoundError:
        return None
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def ensure_backport_loaded() -> None:
    """Connect the backport's signal receivers and register its system check.

    The backport does it in its app's ``ready()``; without ``"django_tasks"`` in
    ``INSTALLED_APPS`` nothing would reset its backends when a test overrides ``TASKS``, and
    the backends' own checks (this package's among them) would never run. Importing a module
    twice is a no-op, so it is safe with the app installed too.
    """
    if not BUILTIN:
        for name in ("checks", "signals"):
            importlib.import_module(f"{TASKS_MODULE}.{name}")


def fetch_returned_rows(connection: BaseDatabaseWrapper, cursor: Any) -> list[Any]:
    """The rows an INSERT ... RETURNING just sent back, through the database's operations.

    Django 6.1 named the method ``fetch_returned_rows(cursor, returning_params)``; 5.2 and 6.0
    have ``fetch_returned_insert_rows(cursor)``.
    """
    ops = connection.ops
    if hasattr(ops, "fetch_returned_rows"):
        return list(ops.fetch_returned_rows(cursor, ()))
    return list(ops.fetch_returned_insert_rows(cursor))  # type: ignore[attr-defined]
