"""The context a running job sees: Django's TaskContext plus cooperative cancellation.

Cancelling a running job sets ``Job.cancel_requested``; the worker reads it back when it renews
the job's lease and raises the flag here. A long task checks it between steps::

    @task(takes_context=True)
    def rebuild_index(context, shard: int) -> None:
        for batch in batches(shard):
            context.raise_if_cancel_requested()  # the job ends "cancelled"
            index(batch)

Code that may run on other backends too can ask :func:`is_cancel_requested` instead.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django_skipqueue.compat import TaskContext
from django_skipqueue.exceptions import JobCancelled

#: The job whose attempt runs in this thread or coroutine (None outside one): JSON log lines
#: read it to say which job a line is about (monitoring/logs.py).
current_job: ContextVar[Any] = ContextVar("skipqueue_current_job", default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobContext(TaskContext):  # type: ignore[misc]  # the stubs miss frozen=True
    """A ``TaskContext`` whose job can be asked to stop."""

    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancel_requested(self) -> bool:
        """Tell whether someone asked this job to stop (seen at the last lease renewal)."""
        return self.cancel_event.is_set()

    def raise_if_cancel_requested(self) -> None:
        """Raise JobCancelled when cancellation was requested: the job then ends cancelled."""
        if self.cancel_requested:
            raise JobCancelled(f"Job {self.task_result.id} was cancelled while running.")


def is_cancel_requested(context: TaskContext) -> bool:
    """Tell whether the job of ``context`` should stop; False on backends that cannot say."""
    return bool(getattr(context, "cancel_requested", False))
