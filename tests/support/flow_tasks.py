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
    are retried at once (no backoff)."""
    flaky(context, key, seq, failures, 0.0)


def flaky(context: TaskContext, key: str, seq: int, failures: int, seconds: float) -> None:
    """Run ``seconds``; the first ``failures`` attempts raise. The ledger's start is this
    attempt's claim, the job's ``last_attempted_at`` (what a rate window counts), read while
    the attempt holds the job."""
    job_id = int(context.task_result.id)
    claimed = Job.objects.filter(pk=job_id).values_list("last_attempted_at", flat=True).get()
    entry = FlowLedgerEntry.objects.create(
        job_id=job_id, key=key, seq=seq, attempt=context.attempt, started_at=claimed
    )
    time.sleep(seconds)
    FlowLedgerEntry.objects.filter(pk=entry.pk).update(ended_at=DatabaseNow())
    if context.attempt <= failures:
        raise RuntimeError(f"attempt {context.attempt} of {failures} planned failures")


# A concurrency limit (or order) and a rate on one key: a retried job keeps its slot, and each
# of its attempts is a start the key's rate window counts.
_BOTH = {"takes_context": True, "rate_limit": (4, 0.5), "max_attempts": 4}


@task(**_BOTH, concurrency_key="pool:{key}", concurrency_limit=2, retry_backoff=0)
def limited_rated_flaky(context: TaskContext, key: str, seq: int, failures: int) -> None:
    """Two at once and four starts per half second per key; failures retried at once."""
    flaky(context, key, seq, failures, 0.01)


@task(**_BOTH, concurrency_key="line:{key}", ordered=True, retry_backoff=0)
def ordered_rated_flaky(context: TaskContext, key: str, seq: int, failures: int) -> None:
    """One at a time in enqueue order, four starts per half second; failures retried at once."""
    flaky(context, key, seq, failures, 0.01)


@task(**_BOTH, concurrency_key="pool:{key}", concurrency_limit=2, retry_backoff=0.02)
def limited_rated_backoff(context: TaskContext, key: str, seq: int, failures: int) -> None:
    """As limited_rated_flaky; a failure is retried after a short backoff (scheduled)."""
    flaky(context, key, seq, failures, 0.01)


@task(**_BOTH, concurrency_key="line:{key}", ordered=True, retry_backoff=0.02)
def ordered_rated_backoff(context: TaskContext, key: str, seq: int, failures: int) -> None:
    """As ordered_rated_flaky; a failure is retried after a short backoff (scheduled)."""
    flaky(context, key, seq, failures, 0.01)


@task(takes_context=True)
def plain(context: TaskContext, key: str, seq: int, seconds: float) -> None:
    """No flow control: for the mixed queue."""
    run(context, key, seq, seconds)
