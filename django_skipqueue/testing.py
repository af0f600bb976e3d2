"""Test helpers: run the queued jobs in the test's own process, and assert on what was enqueued.

``run_jobs()`` claims and runs the ready jobs of the test's database in the calling thread, on
the test's connection, through the worker's own path: ``Job.objects.claim()`` (the fenced
claim), ``Executor._attempt()`` (context, ``task_started``, transactional tasks, the retry
policy) and ``recording.record()`` (the fenced transitions), then ``task_finished``. So retries,
snoozes, fencing and transactional tasks behave as under ``runworkers``, and it works inside
``TestCase`` (whose transaction it shares: nothing needs to commit) as in
``TransactionTestCase``. It imports the models: import it from tests, not from settings.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from django_skipqueue import transitions
from django_skipqueue.compat import Task, task_backends
from django_skipqueue.context import current_job, resolve_task
from django_skipqueue.models import Job, JobStatus
from django_skipqueue.payload import normalize_arguments
from django_skipqueue.worker import recording
from django_skipqueue.worker.executor import Executor, Outcome, Running, failure
from django_skipqueue.worker.owner import owner_id

__all__ = [
    "JobsRun",
    "TooManyRuns",
    "assert_enqueued",
    "assert_not_enqueued",
    "enqueued_jobs",
    "run_jobs",
    "running_jobs",
]

#: Attempts one run_jobs() call makes at most: a job that keeps coming back is a bug to show.
MAX_RUNS = 1000


class TooManyRuns(AssertionError):
    """run_jobs() made ``max_runs`` attempts and jobs were still ready."""


@dataclass
class JobsRun:
    """What a run_jobs() call did: each attempt's job id and how it ended, in order."""

    attempts: list[tuple[int, str]] = field(default_factory=list)

    @property
    def job_ids(self) -> list[int]:
        """The ids of the jobs that ran, each once, in the order of their first attempt."""
        return list(dict.fromkeys(pk for pk, _ in self.attempts))

    def __len__(self) -> int:
        return len(self.attempts)


def run_jobs(
    *,
    backend: str = "default",
    queues: Sequence[str] | None = None,
    scheduled: bool = False,
    max_runs: int = MAX_RUNS,
) -> JobsRun:
    """Run the ready jobs (and those that become ready meanwhile) one at a time; return them.

    Retries with a backoff wait as ``scheduled``, as they would in production; pass
    ``scheduled=True`` to make every scheduled job ready first, whatever its ``run_after``
    (deferred jobs, retries and snoozes then run at once, and again after each attempt).
    ``queues`` defaults to every queue of the backend's ``QUEUES`` (any queue if empty).
    """
    skipqueue = task_backends[backend]
    using: str = getattr(skipqueue, "database", "default")
    names = list(queues) if queues is not None else list(getattr(skipqueue, "queue_names", []))
    executor = Executor(1, backend, using, on_done=lambda running, outcome: None)
    owner = owner_id()
    report = JobsRun()
    try:
        while True:
            if scheduled:
                waiting = Job.objects.using(using).filter(status=JobStatus.SCHEDULED)
                keyed = waiting.filter(flow_key__isnull=False)
                flow_keys: set[str] = set()
                holders: dict[str, list[int]] = {}
                for pk, key, slot in keyed.values_list("pk", "flow_key", "flow_slot"):
                    flow_keys.add(key)
                    if slot:
                        holders.setdefault(key, []).append(pk)
                with transaction.atomic(using=using):
                    transitions.promote(waiting, flow_keys, holders)
            if len(report) >= max_runs:
                ready = Job.objects.using(using).filter(status=JobStatus.READY)
                if names:
                    ready = ready.filter(queue_name__in=names)
                if ready.exists():
                    raise TooManyRuns(f"{max_runs} attempts, and jobs are still ready.")
                return report
            job = _claim_one(using, names, owner)
            if job is None:
                return report
            outcome = _attempt(executor, Running(job))
            recording.record([outcome], using)
            report.attempts.append((job.pk, "lost" if outcome.lost else outcome.status))
            if not outcome.lost:
                recording.send_finished(outcome, backend)
    finally:
        executor.shutdown()


def _claim_one(using: str, queues: list[str], owner: str) -> Job | None:
    if not queues:  # QUEUES = []: every queue that has a ready job
        ready = Job.objects.using(using).filter(status=JobStatus.READY)
        queues = sorted(set(ready.values_list("queue_name", flat=True)))
        if not queues:
            return None
    claimed = Job.objects.db_manager(using).claim(queues, limit=1, owner=owner)
    return claimed[0] if claimed else None


def _attempt(executor: Executor, running: Running) -> Outcome:
    """The attempt of a worker's job thread, in this thread and on its connection."""
    try:
        task = resolve_task(running.job.task_path)
    except Exception as error:
        return failure(running, None, error, time.monotonic())
    try:
        return executor._attempt(running, task)
    finally:
        current_job.set(None)  # as a job thread does: the test's next log lines are not the job's


@contextlib.contextmanager
def running_jobs(**options: Any) -> Iterator[JobsRun]:
    """Run the jobs enqueued in the block when it ends (``run_jobs(**options)``)."""
    report = JobsRun()
    yield report
    report.attempts += run_jobs(**options).attempts


def enqueued_jobs(
    task: Task | None = None,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    statuses: Sequence[str] | None = None,
    using: str = "default",
) -> list[Job]:
    """The jobs of ``task`` (any task if None) with these arguments and statuses, oldest first.

    Arguments compare as stored (JSON: a tuple is a list); None matches any.
    """
    rows = Job.objects.using(using).order_by("pk")
    if task is not None:
        rows = rows.filter(task_path=task.module_path)
    if statuses is not None:
        rows = rows.filter(status__in=list(statuses))
    json_args, json_kwargs = normalize_arguments(args or (), kwargs or {})
    return [
        job
        for job in rows
        if (args is None or job.args == json_args)
        and (kwargs is None or job.kwargs == json_kwargs)
    ]


def assert_enqueued(
    task: Task,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    count: int | None = None,
    statuses: Sequence[str] | None = None,
    using: str = "default",
) -> list[Job]:
    """Fail unless ``task`` was enqueued with these arguments (exactly ``count`` times, if
    given; at least once otherwise); return the matching jobs."""
    jobs = enqueued_jobs(task, args=args, kwargs=kwargs, statuses=statuses, using=using)
    if (count is None and not jobs) or (count is not None and len(jobs) != count):
        wanted = "at least 1" if count is None else str(count)
        seen = [
            (job.pk, job.args, job.kwargs, job.status)
            for job in enqueued_jobs(task, statuses=statuses, using=using)
        ]
        raise AssertionError(
            f"Expected {wanted} job(s) of {task.module_path} with args={args!r} "
            f"kwargs={kwargs!r}, found {len(jobs)}. Its jobs: {seen or 'none'}."
        )
    return jobs


def assert_not_enqueued(
    task: Task,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    using: str = "default",
) -> None:
    """Fail if ``task`` was enqueued with these arguments (any arguments if both are None)."""
    assert_enqueued(task, args=args, kwargs=kwargs, count=0, using=using)
