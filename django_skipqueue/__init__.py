"""A crash-safe Django Tasks backend on MySQL/MariaDB, built on FOR UPDATE SKIP LOCKED.

Stable import paths (everything else is internal and may move):

- ``django_skipqueue.backend.SkipQueueBackend``: the ``TASKS`` backend.
- ``django_skipqueue.tasks.SkipQueueTask``: the task class with this backend's options.
- ``django_skipqueue.tasks.task``: ``@task`` with those options on every supported Django.
- ``django_skipqueue.context``: ``JobContext``, ``is_cancel_requested``.
- ``django_skipqueue.exceptions``: every exception the queue raises or records.
- ``django_skipqueue.testing``: ``run_jobs``, ``running_jobs``, ``assert_enqueued``,
  ``assert_not_enqueued``, ``enqueued_jobs`` (tests only: it imports the models);
  ``django_skipqueue.pytest_plugin``: the ``skipqueue`` fixture.
- ``django_skipqueue.models``: ``Job``, ``JobStatus`` and the other tables.
- ``django_skipqueue.queues``: ``pause``, ``resume``.
- ``django_skipqueue.worker``: ``Supervisor``, ``Worker``, ``WorkerOptions``,
  ``default_maintenance``.
- ``django_skipqueue.monitoring.metrics``: ``CLAIM_LATENCY_BUCKETS_MS``, ``merge_histograms``,
  ``histogram_percentile``.

The top level holds what runs in every process, the web process first (backend, tasks,
enqueue, context, queues, wake-ups, settings, checks, the state machine); the folders hold
what one process role runs (``worker``, ``maintenance``, ``monitoring``, ``management``,
``admin``), the SQL machinery (``db``) and the optional apps, which plug in through
``extensions.py`` (no core module imports one). Top-level modules must not import those
folders, but ``db``, ``models`` and ``monitoring`` (which the web process reads through).

Nothing here imports a model: Django loads this package before the app registry is ready.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

__version__ = "0.1.0"

#: Import paths documented before the package was laid out by process role, and their homes.
MOVED_MODULES = {
    "django_skipqueue.metrics": "django_skipqueue.monitoring.metrics",
    "django_skipqueue.options": "django_skipqueue.worker.options",
    "django_skipqueue.pausing": "django_skipqueue.queues",
    "django_skipqueue.supervisor": "django_skipqueue.worker.supervisor",
}


class _MovedModuleLoader(importlib.abc.Loader):
    """Serve a moved module under its old name, with a DeprecationWarning."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        home = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {home}; the old path will be removed in a future release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(home)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module is the one already imported under its new name."""


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Find the old import paths of MOVED_MODULES, and only those."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedModuleLoader())


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModuleFinder())
