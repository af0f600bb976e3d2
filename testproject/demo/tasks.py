"""Module-level tasks of the demo workload."""

from __future__ import annotations

import asyncio
import random
import time

from django_skipqueue.compat import TaskContext
from django_skipqueue.tasks import task
from testproject.demo.models import LedgerEntry


@task
def add(a: int, b: int) -> int:
    """Return a sum: the smallest useful task."""
    return a + b


@task(takes_context=True)
def record(context: TaskContext, label: str = "") -> int:
    """Write one ledger row per execution, so a run can be checked for duplicates."""
    result = context.task_result
    entry = LedgerEntry.objects.create(
        job_id=int(result.id),
        attempt=context.attempt,
        worker=result.worker_ids[-1] if result.worker_ids else "",
        label=label,
    )
    return entry.pk


@task(queue_name="emails", max_attempts=4, retry_backoff=0.5)
def send_welcome_email(user_id: int) -> str:
    """Pretend to send mail, failing now and then like a real SMTP server."""
    time.sleep(random.uniform(0.001, 0.01))
    if random.random() < 0.1:
        raise ConnectionError(f"SMTP server refused the message for user {user_id}")
    return f"sent to user {user_id}"


@task(queue_name="reports", priority=-10)
async def build_report(rows: int) -> dict[str, int]:
    """An async task: runs on the worker's event loop."""
    await asyncio.sleep(0.005)
    return {"rows": rows, "total": sum(range(rows))}
