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
from dataclasses import dataclass, field

from django_skipqueue.compat import TaskContext
from django_skipqueue.exceptions import JobCancelled


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
