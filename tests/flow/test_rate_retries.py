"""Acceptance: every attempt is a start its key's rate window counts (19, 21).

A rate-limited job whose attempt fails and is retried without a backoff (by the worker, or by
the reaper after its lease expired) waits ``blocked`` for its key's window like a new job; no
window holds more than ``rate`` starts, every attempt counted. On a key with a concurrency
limit (or ordered) too, the retried job keeps its slot while it waits, so the limit and the
order hold as well.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from datetime import timedelta
from itertools import groupby

import pytest

from django_skipqueue.db.clock import DatabaseNowPlus, read_db_now
from django_skipqueue.flow import admission
from django_skipqueue.maintenance.reap import reap
from django_skipqueue.models import FlowKey, Job
from testproject.demo.models import FlowLedgerEntry
from tests.flow.ledger import intervals, most_at_once
from tests.support import flow_tasks as ft
from tests.support.tasks import call_each_second
from tests.support.workers import Runworkers, wait_for

KEYS = 3
JOBS = 8  # per key
RATE, PERIOD = 4, 0.5  # ft.rated_flaky's rate_limit


def failures(seq: int) -> int:
    """Planned failures of job ``seq``: one or two, each retried at once."""
    return 1 + seq % 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.skip_locked
@pytest.mark.slow
def test_no_window_holds_more_than_the_rate_counting_every_attempt(child_env, manage_py, tmp_path):
    calls = [(ft.rated_flaky, [f"k{n % KEYS}", n, failures(n)], {}) for n in range(KEYS * JOBS)]
    ft.rated_flaky.get_backend().enqueue_many(calls)
    workers = Runworkers(
        manage_py, child_env, tmp_path / "rate-retries.log",
        "--processes", "2", "--threads", "4", "--queues", "default",
    )  # fmt: skip
    try:
        # A generous bound for a loaded machine: the windows alone take about 2.5 s per key.
        wait_for(
            lambda: Job.objects.filter(status="succeeded").count() == len(calls),
            timeout=120, what="every job succeeded",
        )  # fmt: skip
    finally:
        workers.stop()

    # Nothing lost, every attempt ran as planned: each job's planned failures, then success.
    jobs = {job.pk: job for job in Job.objects.all()}
    assert len(jobs) == len(calls)
    for job in jobs.values():
        planned = failures(job.args[1])
        causes = [error["exception_class_path"] for error in job.errors]
        assert job.status == "succeeded" and job.attempts == planned + 1, (job.pk, causes)
    entries = list(FlowLedgerEntry.objects.all())
    assert len(entries) == sum(job.attempts for job in jobs.values())
    # Every start (a claim, by the database clock) in the fixed windows the admission counts.
    per_window: dict[str, Counter[object]] = defaultdict(Counter)
    for entry in entries:
        per_window[entry.key][admission.window_start(entry.started_at, PERIOD)] += 1
    assert sorted(per_window) == [f"k{n}" for n in range(KEYS)]
    most = max(max(counts.values()) for counts in per_window.values())
    # (Starts per window of each key, in window order.)
    assert most <= RATE, {key: [n for _, n in sorted(c.items())] for key, c in per_window.items()}
    # The windows were used: more than one start in some window of each key.
    assert all(max(counts.values()) > 1 for counts in per_window.values())
    print(f"most starts in one window: {most} (rate {RATE} per {PERIOD} s)")


def run_until_done(calls, child_env, manage_py, log) -> dict[int, Job]:
    """Enqueue ``calls``, run two worker processes until every job succeeded; return the jobs,
    after checking that each ran its planned failures and then succeeded, nothing more."""
    ft.rated_flaky.get_backend().enqueue_many(calls)
    workers = Runworkers(
        manage_py, child_env, log, "--processes", "2", "--threads", "4", "--queues", "default"
    )
    try:
        wait_for(
            lambda: Job.objects.filter(status="succeeded").count() == len(calls),
            timeout=120, what="every job succeeded",
        )  # fmt: skip
    finally:
        workers.stop()
    jobs = {job.pk: job for job in Job.objects.all()}
    assert len(jobs) == len(calls)
    for job in jobs.values():
        causes = [error["exception_class_path"] for error in job.errors]
        planned = job.args[2]  # the task's failures argument
        assert job.status == "succeeded" and job.attempts == planned + 1, (job.pk, causes)
    return jobs


def check_limit_rate_and_order(jobs: dict[int, Job], ordered: set[str]) -> int:
    """Check every key's starts per window, executions at once and (``ordered`` keys) order;
    return the most starts in one window of any key."""
    entries = list(FlowLedgerEntry.objects.all())
    assert len(entries) == sum(job.attempts for job in jobs.values())
    per_window: dict[str, Counter[object]] = defaultdict(Counter)
    for entry in entries:
        per_window[entry.key][admission.window_start(entry.started_at, PERIOD)] += 1
    most = max(max(counts.values()) for counts in per_window.values())
    print(
        f"most starts in one window: {most} (rate {RATE} per {PERIOD} s);",
        {key: [n for _, n in sorted(c.items())] for key, c in sorted(per_window.items())},
    )
    assert most <= RATE, {key: [n for _, n in sorted(c.items())] for key, c in per_window.items()}
    for key, runs in intervals().items():
        # From each attempt's claim to the end of its task: a slot covers at least that.
        assert most_at_once(runs) <= (1 if key in ordered else LIMIT), key
        if key in ordered:
            # One job at a time by its claims, each job's attempts in a row, in enqueue order.
            started = [job_id for _, _, job_id in runs]
            enqueued = sorted(pk for pk, job in jobs.items() if job.args[0] == key)
            assert [job_id for job_id, _ in groupby(started)] == enqueued, key
    states = FlowKey.objects.all()
    assert [(s.running, s.blocked_holders) for s in states] == [(0, [])] * len(states)
    return most


LIMIT = 2  # ft.limited_rated_*'s concurrency_limit


@pytest.mark.django_db(transaction=True)
@pytest.mark.skip_locked
@pytest.mark.slow
def test_a_key_with_a_limit_and_a_rate_counts_every_retry_at_once(child_env, manage_py, tmp_path):
    calls = [
        (task, [key, n, failures(n)], {})
        for n in range(JOBS)
        for task, key in (
            (ft.limited_rated_flaky, "pool0"),
            (ft.limited_rated_flaky, "pool1"),
            (ft.ordered_rated_flaky, "line0"),
        )
    ]
    jobs = run_until_done(calls, child_env, manage_py, tmp_path / "limit-rate.log")
    check_limit_rate_and_order(jobs, ordered={"line0"})


@pytest.mark.django_db(transaction=True)
@pytest.mark.skip_locked
@pytest.mark.slow
def test_a_key_with_a_limit_and_a_rate_counts_every_retry_after_a_backoff(
    child_env, manage_py, tmp_path
):
    calls = [
        (task, [key, n, failures(n) if n % 3 == 0 else 0], {})
        for n in range(JOBS * 2)
        for task, key in ((ft.limited_rated_backoff, "pool0"), (ft.ordered_rated_backoff, "line0"))
    ]
    jobs = run_until_done(calls, child_env, manage_py, tmp_path / "limit-rate-backoff.log")
    check_limit_rate_and_order(jobs, ordered={"line0"})


def lose_lease(api: str) -> Job:
    """Claim the API's job and let its lease expire (its worker vanished)."""
    job = Job.objects.get(flow_key=f"{call_each_second.module_path}:api:{api}")
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w-gone")
    Job.objects.filter(pk=mine.pk).update(lease_until=DatabaseNowPlus(-5))
    return mine


@pytest.mark.django_db
@pytest.mark.skip_locked
def test_a_lost_lease_retried_at_once_waits_for_the_next_window():
    job = Job.objects.get(pk=call_each_second.enqueue("maps").id)
    assert job.status == "ready"  # the window's one start
    claimed = lose_lease("maps")
    assert reap(runner="r").retried == 1
    job.refresh_from_db()
    state = FlowKey.objects.get(key=job.flow_key)
    assert job.errors[-1]["exception_class_path"].endswith("LeaseExpired")
    if state.window_start == admission.window_start(claimed.last_attempted_at, 1.0):
        # The lost attempt spent the window: the retry waits for the next one.
        assert (job.status, state.window_count) == ("blocked", 1)
        assert state.wake_at == state.window_start + timedelta(seconds=1)
        # The flow timer admits it once the window has turned (by the database clock).
        # (Not wait_for: it would close this test's connection, inside its transaction.)
        while read_db_now("default") < state.wake_at:
            time.sleep(0.05)
        assert admission.wake_due("default") == 1
        job.refresh_from_db()
    # Admitted in a window of its own, once: the attempt's start is counted there.
    state.refresh_from_db()
    assert job.status == "ready" and not job.flow_slot
    assert (state.window_count, state.window_jobs) == (1, [job.pk])
    assert state.window_start > admission.window_start(claimed.last_attempted_at, 1.0)
