"""Workflows: batches of jobs with callbacks, and chains of steps, counted exactly once.

Add ``"django_skipqueue.workflows"`` to INSTALLED_APPS next to ``django_skipqueue``. The API is
importable from here; it loads lazily because models cannot be imported while Django loads the
apps.

The core writes a job's status in ``transitions.py`` and calls :mod:`.counting` in the same
transaction for a job whose ``batch_id`` is set; that is the only way in. Imports of the core
only ``apps``, ``enqueue`` (building and inserting jobs), ``tasks``, ``context``,
``exceptions``, ``db`` and ``admin.readonly``; never the ``worker`` loop or the job admin's
other modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django_skipqueue.workflows.api import batch, batch_result, chain, extend, step

__all__ = ["batch", "batch_result", "chain", "extend", "step"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from django_skipqueue.workflows import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
