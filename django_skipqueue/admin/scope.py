"""Which database and which queues the admin shows: those of the SkipQueueBackend backends.

The admin reads and changes jobs on one database, the one the default skipqueue backend
stores its jobs in (its ``OPTIONS["DATABASE"]``), never a bare default connection.
"""

from __future__ import annotations

from dataclasses import dataclass

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import DEFAULT_TASK_BACKEND_ALIAS, task_backends


@dataclass(frozen=True)
class QueueRef:
    """A queue as the pause API names it: the task backend's alias and the queue's name."""

    backend: str
    name: str


def skipqueue_backends() -> list[SkipQueueBackend]:
    """Return the configured SkipQueueBackends, the default backend first."""
    found = [b for b in task_backends.all() if isinstance(b, SkipQueueBackend)]
    return sorted(found, key=lambda b: b.alias != DEFAULT_TASK_BACKEND_ALIAS)


def admin_database() -> str:
    """Return the database alias the admin reads jobs from."""
    backends = skipqueue_backends()
    return backends[0].database if backends else "default"


def configured_queues() -> list[QueueRef]:
    """Return every queue of the backends that store jobs in the admin's database, in order."""
    using = admin_database()
    refs: dict[str, QueueRef] = {}
    for backend in skipqueue_backends():
        if backend.database == using:
            for name in backend.queue_names:
                refs.setdefault(name, QueueRef(backend.alias, name))
    return list(refs.values())
