"""The task of the per-version test: this backend's options, declared the portable way."""

from __future__ import annotations

from django_skipqueue.compat import TaskContext
from django_skipqueue.tasks import task


@task(
    takes_context=True,
    queue_name="default",
    priority=5,
    max_attempts=3,
    retry_backoff=0,
    timeout=60,
    lease=30,
)
def add_on_second_attempt(context: TaskContext, a: int, b: int) -> dict[str, int]:
    """Fail the first attempt, succeed on the second: one retry, then a result."""
    if context.attempt < 2:
        raise RuntimeError(f"attempt {context.attempt} fails on purpose")
    return {"sum": a + b, "attempt": context.attempt}
