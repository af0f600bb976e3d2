"""Tasks of the workflow tests (module level: worker processes import them by path)."""

from __future__ import annotations

import threading
import time

from django_skipqueue.compat import TaskContext
from django_skipqueue.models import Job
from django_skipqueue.tasks import task
from django_skipqueue.workflows import batch_result
from tests.support.worker_tasks import write_ledger


@task(takes_context=True, max_attempts=10, retry_backoff=0)
def part(context: TaskContext, n: int, flaky: bool = False, pause: float = 0.0) -> int:
    """Return ``n * 2`` after ``pause`` seconds; a flaky part raises on its first attempt."""
    time.sleep(pause)
    if flaky and context.attempt == 1:
        raise RuntimeError(f"part {n} fails once")
    return n * 2


@task(max_attempts=1)
def broken(n: int) -> None:
    """Fail for good at once."""
    raise ValueError(f"part {n} is broken")


@task(max_attempts=5, retry_backoff=0)
def callback(batch_id: int, label: str = "") -> int:
    """Return the batch id (no query: in-process workers' threads must not keep connections)."""
    return batch_id


@task(takes_context=True, transactional=True, max_attempts=5, retry_backoff=0)
def callback_once(context: TaskContext, batch_id: int, label: str = "") -> dict[str, object]:
    """Record one execution (it commits with the job's completion) and what the batch showed.

    A transactional task: its ledger row commits with its completion, so one ledger row per
    callback job proves one committed run, kills or not.
    """
    write_ledger(context, label)
    return _seen(batch_id)


def _seen(batch_id: int) -> dict[str, object]:
    seen = batch_result(batch_id)
    last = Job.objects.filter(pk__in=seen.job_ids).order_by("-finished_at").first()
    return {
        "size": seen.size, "succeeded": seen.succeeded, "failed": seen.failed,
        "cancelled": seen.cancelled, "failures": len(seen.failures),
        "unfinished": Job.objects.filter(pk__in=seen.job_ids, finished_at=None).count(),
        "last_finished_at": last.finished_at.isoformat() if last and last.finished_at else None,
    }  # fmt: skip


@task(max_attempts=5, retry_backoff=0)
def add(value: int, n: int) -> int:
    """A chain step: return ``value + n``."""
    return value + n


@task(takes_context=True, transactional=True, max_attempts=20, retry_backoff=0)
def add_once(context: TaskContext, value: int, n: int, seconds: float = 0.0) -> int:
    """A chain step that records its execution with its completion, then returns ``value + n``."""
    write_ledger(context, f"add {value}+{n}")
    threading.Event().wait(seconds)
    return value + n


@task(max_attempts=1)
def add_or_fail(value: int, limit: int) -> int:
    """A chain step that fails for good once ``value`` reaches ``limit``."""
    if value >= limit:
        raise ValueError(f"{value} is too much")
    return value + 1
