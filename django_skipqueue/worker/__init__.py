"""The worker processes: what ``runworkers`` runs, from the supervisor down to one attempt.

Owns the supervisor (fork, replace, signals, the final summary), the worker loop (record and
claim, run, renew), the claimer, the jobs a worker holds, the executor, the recording of
outcomes, the heartbeat (with the process's connection and its backoff), owner ids, the
start-up checks and ``WorkerOptions``. The loop sleeps and learns of stop signals through
``django_skipqueue.wakeup``.

Must not import ``admin``, ``management`` or ``maintenance`` (the supervisor runs the
maintenance loop through ``default_maintenance()``, which imports it by name at run time).

Stable import paths: ``from django_skipqueue.worker import Supervisor, Worker, WorkerOptions,
default_maintenance``. The names load on first use, so importing this package loads no model.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Supervisor", "Worker", "WorkerOptions", "default_maintenance"]

_HOMES = {
    "Supervisor": "django_skipqueue.worker.supervisor",
    "default_maintenance": "django_skipqueue.worker.supervisor",
    "Worker": "django_skipqueue.worker.loop",
    "WorkerOptions": "django_skipqueue.worker.options",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (models load only after app loading)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
