"""The queues of a skipqueue task backend: where their jobs live, their names, their pauses.

A backend is found by its ``TASKS`` alias; its ``database`` holds its jobs and its ``QUEUES``
name the queues it accepts (any valid name when that list is empty).

Pause and resume: a paused queue is not claimed; jobs already running finish. A pause is a row
in the queue's database, so it holds for every worker on every host. Each process keeps the
list of paused queues for ``SKIPQUEUE_PAUSE_CACHE_SECONDS`` (one second by default): a claim
then costs no extra query, and a pause takes effect within that time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from django.db import IntegrityError, transaction

from django_skipqueue.compat import BaseTaskBackend, InvalidTaskBackend, task_backends
from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.exceptions import InvalidQueueName
from django_skipqueue.models.queue import QueuePause  # its module: the manager imports this
from django_skipqueue.tasks import QUEUE_NAME_PATTERN

# The backend by its alias, and its queues.


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
    names = queue_names(alias)
    if not names and QUEUE_NAME_PATTERN.fullmatch(queue_name):
        return
    if queue_name not in names:
        raise InvalidQueueName(
            f"Queue {queue_name!r} is not one of backend {alias!r}'s queues ({', '.join(names)})."
        )


# Pause and resume.
_cache: dict[str, tuple[float, frozenset[str]]] = {}
_cache_lock = threading.Lock()


def pause(queue_name: str, *, backend: str = "default", reason: str = "", by: str = "") -> bool:
    """Pause ``queue_name`` of the task backend ``backend``; return False if already paused."""
    using = _database_of(backend, queue_name)
    try:
        with transaction.atomic(using=using):
            QueuePause.objects.using(using).create(
                backend_alias=backend,
                queue_name=queue_name,
                paused_at=read_db_now(using),
                paused_by=by[:150],
                reason=reason[:255],
            )
    except IntegrityError:
        return False
    finally:
        forget(using)
    return True


def resume(queue_name: str, *, backend: str = "default") -> bool:
    """Resume ``queue_name``; return False if it was not paused."""
    using = _database_of(backend, queue_name)
    deleted, _ = QueuePause.objects.using(using).filter(queue_name=queue_name).delete()
    forget(using)
    return deleted > 0


def paused_queues(using: str = "default") -> frozenset[str]:
    """Read the names of the paused queues of database ``using`` (no cache)."""
    names = QueuePause.objects.using(using).values_list("queue_name", flat=True)
    return frozenset(names)


def unpaused(queues: Iterable[str], using: str = "default") -> list[str]:
    """Return ``queues`` without the paused ones, in order, from a list at most ~1 s old."""
    queues = list(queues)
    paused = _cached_paused(using)
    return [name for name in queues if name not in paused] if paused else queues


def forget(using: str | None = None) -> None:
    """Drop this process's cached list of paused queues (all databases when ``using`` is None)."""
    with _cache_lock:
        if using is None:
            _cache.clear()
        else:
            _cache.pop(using, None)


def _cached_paused(using: str) -> frozenset[str]:
    now = time.monotonic()
    entry = _cache.get(using)
    if entry is not None and entry[0] > now:
        return entry[1]
    paused = paused_queues(using)
    with _cache_lock:
        _cache[using] = (now + get_settings().PAUSE_CACHE_SECONDS, paused)
    return paused


def _database_of(backend_alias: str, queue_name: str) -> str:
    """Return the database of a skipqueue task backend, checking the queue is one of its own."""
    check_queue(backend_alias, queue_name)
    return queue_database(backend_alias)
