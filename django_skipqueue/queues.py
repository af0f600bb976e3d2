"""The database and the queue names of a skipqueue task backend, by its TASKS alias."""

from __future__ import annotations

from django_skipqueue.compat import BaseTaskBackend, InvalidTaskBackend, task_backends
from django_skipqueue.exceptions import InvalidQueueName


def skipqueue_backend(alias: str = "default") -> BaseTaskBackend:
    """Return the task backend ``alias``; ValueError if it is missing or not ours."""
    try:
        backend = task_backends[alias]
    except InvalidTaskBackend as error:
        raise ValueError(f"There is no task backend {alias!r} in TASKS.") from error
    if not hasattr(backend, "queue_names"):
        raise ValueError(f"Task backend {alias!r} is not a SkipQueueBackend.")
    return backend


def backend_class(alias: str = "default") -> type[BaseTaskBackend]:
    """Return the class of task backend ``alias``: the sender of its signals (a subclass of
    SkipQueueBackend when the settings name one)."""
    return type(skipqueue_backend(alias))


def queue_database(alias: str = "default") -> str:
    """Return the database alias that task backend ``alias`` keeps its jobs in."""
    return str(getattr(skipqueue_backend(alias), "database", "default"))


def queue_names(alias: str = "default") -> list[str]:
    """Return the queue names task backend ``alias`` declares, in settings order."""
    return list(getattr(skipqueue_backend(alias), "queue_names", []))


def check_queue(alias: str, queue_name: str) -> None:
    """Raise InvalidQueueName unless ``queue_name`` is one of backend ``alias``'s queues
    (any valid name when its QUEUES is ``[]``, as the backend accepts them)."""
    from .backend import QUEUE_NAME_PATTERN

    names = queue_names(alias)
    if not names and QUEUE_NAME_PATTERN.match(queue_name):
        return
    if queue_name not in names:
        raise InvalidQueueName(
            f"Queue {queue_name!r} is not one of backend {alias!r}'s queues ({', '.join(names)})."
        )
