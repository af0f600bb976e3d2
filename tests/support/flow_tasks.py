"""Tasks of the flow-control tests: each writes one ledger row per execution, its start and
end stamped by the database clock (worker processes import them by path)."""

from __future__ import annotations

import time

from django_skipqueue.compat import TaskContext
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.models import Job
from django_skipqueue.tasks import task
from testproject.demo.models import FlowLedgerEntry


def run(context: TaskContext, key: str, seq: int, seconds: float) -> None:
    entry = FlowLedgerEntry.objects.create(
        job_id=int(context.task_result.id),
        key=key,
        seq=seq,
        attempt=context.attempt,
        started_at=DatabaseNow(),
    )
    time.sleep(seconds)
    FlowLedgerEntry.objects.filter(pk=entry.pk).update(ended_at=DatabaseNow())


@task(takes_context=True, concurrency_key="customer:{key}", concurrency_limit=2, max_attempts=3)
def limited(context: TaskContext, key: str, seq: int, seconds: float) -> None:
    """At most two jobs of one key at once."""
    run(context, key, seq, seconds)


@task(takes_context=True, concurrency_key="account:{key}", ordered=True, max_attempts=3,
      retry_backoff=0.05)  # fmt: skip
def in_order(context: TaskContext, key: str, seq: int, seconds: float, fail: bool) -> None:
    """One job of a key at a time, in enqueue order; ``fail``: the first attempt raises."""
    run(context, key, seq, seconds)
    if fail and context.attempt == 1:
        raise RuntimeError("first attempt fails")


@task(takes_context=True, concurrency_key="api:{key}", rate_limit=(10, 1.0))
def rated(context: TaskContext, key: str, seq: int, seconds: float) -> None:
    """At most ten starts per second per key."""
    run(context, key, seq, seconds)


@task(takes_context=True, concurrency_key="api:{key}", rate_limit=(4, 0.5), retry_backoff=0,
      max_attempts=4)  # fmt: skip
def rated_flaky(context: TaskContext, key: str, seq: int, failures: int) -> None:
    """At most four starts per half second per key; the first ``failures`` attempts raise and
    are retried at once (no backoff). The ledger's start is this attempt's claim, the job's
    ``last_attempted_at`` (what a rate window counts), read while the attempt holds the job."""
    job_id = int(context.task_result.id)
    claimed = Job.objects.filter(pk=job_id).values_list("last_attempted_at", flat=True).get()
    FlowLedgerEntry.objects.create(
        job_id=job_id,
        key=key,
        seq=seq,
        attempt=context.attempt,
        started_at=claimed,
        ended_at=DatabaseNow(),
    )
    if context.attempt <= failures:
        raise RuntimeError(f"attempt {context.attempt} of {failures} planned failures")


@task(takes_context=True)
def plain(context: TaskContext, key: str, seq: int, seconds: float) -> None:
    """No flow control: for the mixed queue."""
    run(context, key, seq, seconds)
