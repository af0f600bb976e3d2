"""Module-level tasks for the worker tests (worker processes import them by path)."""

from __future__ import annotations

import logging
import os
import signal
import time

from django_skipqueue.compat import TaskContext
from django_skipqueue.context import is_cancel_requested
from django_skipqueue.exceptions import Snooze
from django_skipqueue.tasks import task
from testproject.demo.models import LedgerEntry


def write_ledger(context: TaskContext, label: str) -> int:
    """Write one row per execution: job id, attempt and the worker that ran it."""
    result = context.task_result
    entry = LedgerEntry.objects.create(
        job_id=int(result.id), attempt=context.attempt, worker=result.worker_ids[-1], label=label
    )
    return entry.pk


@task(takes_context=True)
def slow_record(context: TaskContext, seconds: float = 0.0, label: str = "") -> int:
    time.sleep(seconds)
    return write_ledger(context, label)


@task(takes_context=True)
def announced_record(context: TaskContext, seconds: float, started_dir: str) -> int:
    """slow_record that first leaves a file named after its job and attempt in ``started_dir``.

    A test that stops the worker while tasks run waits for these files, not for a guess of how
    long a loaded machine takes to start a thread.
    """
    announce(context.task_result.id, context.attempt, started_dir)
    time.sleep(seconds)
    return write_ledger(context, "")


def announce(job_id: str, attempt: int, started_dir: str) -> None:
    with open(os.path.join(started_dir, f"{job_id}-{attempt}"), "x"):
        pass


#: The old name of a renamed task, kept while its jobs drain (the run-workers how-to).
slow_record_old_name = slow_record


@task(takes_context=True, transactional=True)
def slow_record_tx(context: TaskContext, seconds: float = 0.0, label: str = "") -> int:
    """Exactly-once: its ledger row commits with its completion, or not at all."""
    time.sleep(seconds)
    return write_ledger(context, label)


@task(takes_context=True, max_attempts=10, retry_backoff=0)
def persistent_record(context: TaskContext, seconds: float = 0.0, label: str = "") -> int:
    """Retried at once, many times: survives a database outage."""
    time.sleep(seconds)
    return write_ledger(context, label)


@task(takes_context=True, max_attempts=3, retry_backoff=0)
def fail_first(context: TaskContext) -> int:
    if context.attempt < 2:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return context.attempt


@task(max_attempts=2, retry_backoff=0)
def always_fail() -> None:
    raise ValueError("always")


@task(max_attempts=3, retry_backoff=4)
def fail_with_backoff() -> None:
    raise ValueError("later")


@task(max_attempts=2, retry_backoff=0)
def kill_own_process() -> None:
    """The worst task: SIGKILL its own worker process."""
    os.kill(os.getpid(), signal.SIGKILL)


@task(takes_context=True, lease=2)
def wait_for_cancel(context: TaskContext, limit: float = 20.0) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        context.raise_if_cancel_requested()  # type: ignore[attr-defined]
        time.sleep(0.05)
    return "not cancelled" if not is_cancel_requested(context) else "cancelled late"


@task(timeout=1, max_attempts=1)
def overrun(seconds: float) -> None:
    time.sleep(seconds)


@task(timeout=1, max_attempts=1)
async def async_overrun(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


@task(max_attempts=2, retry_backoff=0)
async def async_fail() -> None:
    raise LookupError("async failure")


@task
async def async_add(a: int, b: int) -> int:
    import asyncio

    await asyncio.sleep(0.01)
    return a + b


@task
def stamp() -> float:
    """Return when the job started, on this host's clock (latency measurements)."""
    return time.time()


@task(max_attempts=1)
def not_json() -> object:
    return {1, 2}


@task(takes_context=True, max_attempts=3, retry_backoff=0)
def write_then_return_a_set(context: TaskContext) -> object:
    """Write a ledger row (a side effect), then return what JSON cannot hold."""
    write_ledger(context, "not json")
    return {1, 2}


@task
async def async_nap(seconds: float) -> str:
    import asyncio

    await asyncio.sleep(seconds)
    return "rested"


@task(takes_context=True)
async def announced_nap(context: TaskContext, seconds: float, started_dir: str) -> str:
    """async_nap that first leaves a file in ``started_dir`` (see :func:`announced_record`)."""
    import asyncio

    announce(context.task_result.id, context.attempt, started_dir)
    await asyncio.sleep(seconds)
    return "rested"


# Retry policy (issue 20): each branch of states.next_step() a task's options reach.


@task(takes_context=True, max_attempts=5, retry_backoff=0, retry_on=(ValueError,))
def retry_only_value_errors(context: TaskContext) -> None:
    """ValueError is retried; the KeyError of attempt 3 is not: the job fails at attempt 3."""
    write_ledger(context, "retry_on")
    if context.attempt < 3:
        raise ValueError(f"attempt {context.attempt}: retried")
    raise KeyError("not in retry_on")


@task(
    takes_context=True,
    max_attempts=5,
    retry_backoff=0,
    retry_on=Exception,
    discard_on=(LookupError,),
)
def discard_lookup_errors(context: TaskContext, fail_with: str) -> None:
    """A LookupError fails at once although retry_on=Exception covers it: discard_on wins."""
    write_ledger(context, "discard_on")
    raise {"key": KeyError, "value": ValueError}[fail_with](fail_with)


def measured_backoff(error: BaseException, attempt: int) -> float | None:
    """1.5 s after attempt 1, 3 s after attempt 2, and no attempt 4 (None)."""
    return {1: 1.5, 2: 3.0}.get(attempt)


@task(takes_context=True, max_attempts=10, backoff=measured_backoff)
def custom_backoff(context: TaskContext) -> None:
    write_ledger(context, "backoff")
    raise RuntimeError(f"attempt {context.attempt}")


@task(takes_context=True, max_attempts=1, max_snoozes=3)
def snooze_twice(context: TaskContext) -> int:
    """Snoozes twice (0.5 s each), then succeeds: on its one and only attempt."""
    runs = LedgerEntry.objects.filter(job_id=int(context.task_result.id)).count()
    write_ledger(context, "snooze")
    if runs < 2:
        raise Snooze(0.5)
    return context.attempt


@task(takes_context=True, max_attempts=3, max_snoozes=2)
def snooze_forever(context: TaskContext) -> None:
    write_ledger(context, "snooze")
    raise Snooze(0.2)


@task()
def log_a_line(text: str) -> None:
    """Log as task code does: the JSON formatter must say which job the line is about."""
    logging.getLogger("tests.tasks").warning("the task says %s", text)


@task(takes_context=True)
def loses_its_lease(context: TaskContext) -> None:
    """Hand its own row to another owner while it runs, as the reaper and a second worker
    would after a stall: the worker's completion must find its fence gone."""
    from django_skipqueue.models import Job

    Job.objects.filter(pk=int(context.task_result.id)).update(owner="another-worker")


@task()
def kill_other_sessions() -> int:
    """Kill every other session on this database (MySQL/MariaDB ``KILL``), as a DBA, a proxy
    or a failover would: their next statement fails. Return how many were killed."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ID FROM information_schema.PROCESSLIST "
            "WHERE DB = DATABASE() AND ID <> CONNECTION_ID()"
        )
        others = [row[0] for row in cursor.fetchall()]
        for session in others:
            cursor.execute(f"KILL {int(session)}")
    return len(others)


@task(takes_context=True, max_attempts=2, retry_backoff=0)
def record_then_sleep(context: TaskContext, seconds: float = 0.0) -> int:
    """Write the ledger row (this thread's connection), then sleep: two attempts at most."""
    pk = write_ledger(context, "record_then_sleep")
    time.sleep(seconds)
    return pk
