"""The Task class of this backend: the per-task options ``@task`` and ``using()`` set, its
``@task`` decorator for every supported Django, and the retry policy a task's options make.

The Task a stored path names is found by :func:`django_skipqueue.context.resolve_task`.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, overload

from django_skipqueue.compat import (
    DEFAULT_TASK_BACKEND_ALIAS,
    DEFAULT_TASK_PRIORITY,
    DEFAULT_TASK_QUEUE_NAME,
    Task,
    task_backends,
)
from django_skipqueue.db.text import unstorable
from django_skipqueue.exceptions import InvalidTaskOption
from django_skipqueue.states import RetryPolicy

#: Options the worker reads from the task its module defines, not from the job row: a value
#: given to ``using()`` would never reach the worker, so ``using()`` refuses them.
DECORATOR_ONLY = frozenset(
    {"retry_backoff", "transactional", "retry_on", "discard_on", "backoff", "max_snoozes"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipQueueTask(Task):
    """A ``django.tasks.Task`` with the options this backend understands.

    Set them with ``@task(max_attempts=3, timeout=30)`` (``django_skipqueue.tasks.task`` on every
    supported Django; ``django.tasks.task`` on 6.1 too) or per call with
    ``my_task.using(idempotency_key="order-42").enqueue(...)``, except those of
    DECORATOR_ONLY, which the worker reads from the task itself. None means "the default".
    """

    # Attempts before the job ends failed (SKIPQUEUE_MAX_ATTEMPTS).
    max_attempts: int | None = None
    # Seconds a claim is leased for before the reaper may take it back (SKIPQUEUE_LEASE_SECONDS).
    lease: int | None = None
    # Seconds an attempt may run before it is treated as failed; None for no limit.
    timeout: int | None = None
    # Base of this task's exponential retry backoff in seconds (SKIPQUEUE_RETRY_BACKOFF).
    retry_backoff: float | None = None
    # Commit the task's own database writes together with its completion, fenced.
    transactional: bool = False
    # At most one job with this key is waiting, running or succeeded at a time.
    idempotency_key: str | None = None
    # Exception classes that are retried (None: all); the rest fail the job at once.
    retry_on: type[BaseException] | tuple[type[BaseException], ...] | None = None
    # Exception classes that fail the job at once, attempts left or not.
    discard_on: type[BaseException] | tuple[type[BaseException], ...] = ()
    # (exception, attempt) -> seconds before the next attempt, or None to fail the job.
    backoff: Callable[[BaseException, int], float | None] | None = None
    # Times the task may raise Snooze before the job fails (SKIPQUEUE_MAX_SNOOZES).
    max_snoozes: int | None = None
    # The idempotency key of each call, derived from its arguments: a template such as
    # "sync-{account_id}" or a callable(*args, **kwargs) -> str; prefixed with the task's path.
    unique_key: str | Callable[..., str] | None = None
    # The statuses in which a job's key blocks a new one (None: scheduled, ready, claimed,
    # succeeded, as for every idempotency key).
    unique_while: tuple[str, ...] | None = None
    # What a call whose key a waiting job holds replaces in that job ("args", "run_after");
    # () returns the holder unchanged.
    unique_replace: tuple[str, ...] = ()
    # Flow control (django_skipqueue.flow). The key whose slots a call's job shares: a
    # template such as "customer:{customer_id}" or a callable(*args, **kwargs) -> str,
    # prefixed with the task's path; None: one key for the whole task.
    concurrency_key: str | Callable[..., str] | None = None
    # Jobs of one key running at once, across every worker (None: no limit).
    concurrency_limit: int | None = None
    # One job of a key at a time, in enqueue order; a retried job keeps its place.
    ordered: bool = False
    # In ordered mode, after a job failed for good: "skip" it (default) or "block" the key.
    ordered_failure: str | None = None
    # (starts, seconds): at most that many starts per period per key (or per task).
    rate_limit: tuple[int, float] | None = None

    def using(
        self,
        *,
        priority: int | None = None,
        queue_name: str | None = None,
        run_after: datetime | None = None,
        backend: str | None = None,
        **options: Any,
    ) -> SkipQueueTask:
        """Create a new Task with modified defaults, including this backend's options."""
        refused = sorted(DECORATOR_ONLY & options.keys())
        if refused:
            raise InvalidTaskOption(
                f"{', '.join(refused)} can only be set on the @task decorator: the worker "
                "reads it from the task its module defines, not from the job."
            )
        task: Task = Task.using(
            self, priority=priority, queue_name=queue_name, run_after=run_after, backend=backend
        )
        return replace(task, **options) if options else task  # type: ignore[return-value]


#: A valid queue name. ``\Z``, not ``$``, which matches before a final newline too: "default\n"
#: was valid. Use ``fullmatch``.
QUEUE_NAME_PATTERN = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\Z")
#: What ``unique_replace`` may name: the waiting job's arguments, its run time.
REPLACEABLE = frozenset({"args", "run_after"})
#: Longest stored key (the column's length); a longer derived key is shortened with a hash.
KEY_LENGTH = 191


def call_key(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """Return the idempotency key of a call: the one given to ``using()``, or the derived one."""
    explicit = getattr(task, "idempotency_key", None)
    if explicit is not None or getattr(task, "unique_key", None) is None:
        return explicit
    return derived_key(task, "unique_key", args, kwargs)


def derived_key(task: Task, option: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """Return the key the task's ``option`` (a template or a callable) derives from one call.

    A derived key starts with the task's path, so that two tasks with the same template never
    block each other; one longer than the column keeps its head and ends with a hash of it all.
    """
    spec = getattr(task, option)
    try:
        value = (
            spec(*args, **kwargs)
            if callable(spec)
            else spec.format_map(_arguments_by_name(task, args, kwargs))
        )
    except (TypeError, KeyError, IndexError, AttributeError, ValueError) as error:
        raise InvalidTaskOption(
            f"{option} of {task.module_path} could not be derived from this call: {error!r}."
        ) from error
    if not isinstance(value, str) or not value:
        raise InvalidTaskOption(
            f"{option} of {task.module_path} must give a non-empty string, not {value!r}."
        )
    if problem := unstorable(value):
        raise InvalidTaskOption(
            f"{option} of {task.module_path} gave a key holding {problem}: no database stores it."
        )
    key = f"{task.module_path}:{value}"
    if len(key) <= KEY_LENGTH:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{key[: KEY_LENGTH - 65]}#{digest}"


def check_key_template(task: Task, option: str) -> None:
    """Refuse the task's ``option`` unless it is None, a callable, or a template naming the
    function's parameters (InvalidTaskOption)."""
    spec = getattr(task, option, None)
    if isinstance(spec, str):
        try:
            fields = template_fields(spec)
        except ValueError as error:
            message = f"{option} {spec!r} is not a valid template: {error}."
            raise InvalidTaskOption(message) from error
        parameters = list(inspect.signature(task.func).parameters)
        if task.takes_context:
            parameters = parameters[1:]
        unknown = sorted(fields - set(parameters) - {""})
        if "" in fields:
            unknown.append("an empty {} (name the parameter)")
        if not spec or unknown:
            raise InvalidTaskOption(
                f"{option} {spec!r} must name parameters of {task.func.__name__} in braces "
                f"({', '.join(parameters) or 'it has none'}); unknown: {unknown}."
            )
    elif spec is not None and not callable(spec):
        raise InvalidTaskOption(f"{option} must be a template string or a callable, not {spec!r}.")


def _arguments_by_name(
    task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name, defaults included (the context left out)."""
    context = [None] if task.takes_context else []
    bound = inspect.signature(task.func).bind(*context, *args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    if task.takes_context:
        arguments.pop(next(iter(arguments)))
    return arguments


def template_fields(template: str) -> set[str]:
    """The argument names a key template refers to ("{order.id}" refers to "order")."""
    names = set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field is not None:
            names.add(field.split(".")[0].split("[")[0])
    return names


def retry_policy(task: Task | None) -> RetryPolicy:
    """Return what ``task`` says of its failed attempts (the defaults for another backend's)."""
    if task is None:
        return RetryPolicy()
    retry_on = getattr(task, "retry_on", None)
    return RetryPolicy(
        retry_on=None if retry_on is None else classes(retry_on),
        discard_on=classes(getattr(task, "discard_on", ())),
        backoff=getattr(task, "backoff", None) or getattr(task, "retry_backoff", None),
        max_snoozes=getattr(task, "max_snoozes", None),
    )


def classes(value: Any) -> tuple[type[BaseException], ...]:
    """An exception class or a sequence of them, as a tuple (what isinstance() takes)."""
    return (value,) if isinstance(value, type) else tuple(value)


# ``@task`` with this backend's options on every supported Django.
#
# Django 6.1's ``django.tasks.task`` and the backport's ``django_tasks.task`` pass extra keywords
# (``max_attempts=3``) to the task class of the task's backend; Django 6.0's accepts only its own
# arguments. This decorator does what 6.1's does on each version, so a task module written once
# runs on Django 5.2, 6.0 and 6.1.


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
