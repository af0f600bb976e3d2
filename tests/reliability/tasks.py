"""Tasks of the fault-injection suite (module level: worker processes import them by path).

Each writes the same ledger row as the demo ``record`` task (job, attempt, worker), so the
audit can count executions. The pausing ones hold still on their first attempt only, so that
a test can strike at a known moment and the retry runs straight through.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

from django_skipqueue.compat import TaskContext
from django_skipqueue.tasks import task
from tests.support.worker_tasks import write_ledger


def pause(seconds: float) -> None:
    """Sleep without time.sleep(), which libfaketime breaks (see test_clock.py)."""
    threading.Event().wait(seconds)


def _hold(context: TaskContext, started: str, proceed: str, seconds: float) -> None:
    """On attempt 1: touch ``started``, then wait for ``proceed`` to exist (or ``seconds``)."""
    if context.attempt != 1:
        return
    if started:
        Path(started).touch()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (proceed and Path(proceed).exists()):
        pause(0.02)


@task(takes_context=True, retry_backoff=0)
def record_then_hold(
    context: TaskContext, started: str = "", proceed: str = "", seconds: float = 0.0
) -> int:
    """Write the ledger row (committed at once), then hold."""
    pk = write_ledger(context, "record_then_hold")
    _hold(context, started, proceed, seconds)
    return pk


@task(takes_context=True, retry_backoff=0, transactional=True)
def record_then_hold_tx(
    context: TaskContext, started: str = "", proceed: str = "", seconds: float = 0.0
) -> int:
    """Write the ledger row inside the job's transaction, then hold: exactly-once effects."""
    pk = write_ledger(context, "record_then_hold_tx")
    _hold(context, started, proceed, seconds)
    return pk


@task(takes_context=True, retry_backoff=0)
def hold_then_record(
    context: TaskContext, started: str = "", proceed: str = "", seconds: float = 0.0
) -> int:
    """Hold first, then write the ledger row (a database write after the pause)."""
    _hold(context, started, proceed, seconds)
    return write_ledger(context, "hold_then_record")


@task(takes_context=True, retry_backoff=0, transactional=True)
def hold_then_record_tx(
    context: TaskContext, started: str = "", proceed: str = "", seconds: float = 0.0
) -> int:
    _hold(context, started, proceed, seconds)
    return write_ledger(context, "hold_then_record_tx")


@task(takes_context=True, retry_backoff=0)
def wait_then_record(context: TaskContext, proceed: str = "", label: str = "") -> int:
    """Wait for ``proceed`` to exist (at most a minute), on every attempt; then write the row."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not Path(proceed).exists():
        pause(0.02)
    return write_ledger(context, label)


@task(takes_context=True, retry_backoff=0)
def mark_then_wait(
    context: TaskContext, started: str = "", proceed: str = "", label: str = ""
) -> int:
    """Write ``<started>.<attempt>`` as it begins, then wait for ``proceed`` and write the row."""
    Path(f"{started}.{context.attempt}").touch()
    return wait_then_record.func(context, proceed=proceed, label=label)


@task(max_attempts=2, retry_backoff=0, takes_context=True)
def crash_after(context: TaskContext, started: str = "") -> None:
    """Wait until ``<started>.<attempt>`` exists (a job beside it began), then kill the process."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not Path(f"{started}.{context.attempt}").exists():
        pause(0.02)
    os.kill(os.getpid(), signal.SIGKILL)


# Poison jobs: each must end ``failed`` after its attempts, with an error that says why.


@task(max_attempts=2, retry_backoff=0)
def crash() -> None:
    """Kill the worker process running it (a segfault, an OOM kill)."""
    os.kill(os.getpid(), signal.SIGKILL)


@task(max_attempts=2, retry_backoff=0, timeout=1)
def hang() -> None:
    """Never return (a thread cannot be killed: the worker process is recycled)."""
    pause(3600)


@task(max_attempts=2, retry_backoff=0, timeout=1)
async def async_hang() -> None:
    await asyncio.sleep(3600)


@task(max_attempts=2, retry_backoff=0)
async def async_explode() -> None:
    raise ValueError("an async task failed")


@task(takes_context=True)
def record(context: TaskContext, label: str = "") -> int:
    """The plain ledger task, for rows written by hand (see test_security)."""
    return write_ledger(context, label)


@task(takes_context=True, retry_backoff=0.5, max_attempts=3)
def flaky(context: TaskContext, label: str = "") -> int:
    """Fail the first attempt (before any effect), succeed on the retry (scheduled, promoted)."""
    if context.attempt == 1:
        raise ConnectionError("the first attempt always fails")
    return write_ledger(context, label)


@task(takes_context=True, transactional=True)
def slow_order(context: TaskContext, label: str = "") -> int:
    """A transactional task that takes a while: its effect and completion commit together."""
    pause(0.3)
    return write_ledger(context, label)
