"""Claiming ahead (prefetch): how many jobs, and the bound on how long one waits in a buffer."""

from __future__ import annotations

import signal
import time

import pytest

from django_skipqueue.models import Job
from django_skipqueue.worker.claimer import MAX_AUTO_PREFETCH, Prefetch
from tests.support.worker_tasks import slow_record
from tests.support.workers import Runworkers, wait_for

#: SKIPQUEUE_PREFETCH_MAX_WAIT's default: the bound the docs state.
MAX_WAIT = 0.2


def test_adaptive_prefetch_claims_ahead_only_while_recent_jobs_are_short():
    prefetch = Prefetch(threads=4, fixed=None, max_wait=MAX_WAIT)
    assert prefetch.size(0.0) == 0  # nothing seen yet: no claiming ahead
    for _ in range(4):
        prefetch.observe(0.001)
    assert prefetch.size(0.0) == MAX_AUTO_PREFETCH  # no-op jobs: the cap
    assert prefetch.size(MAX_WAIT / 2 + 0.01) == 0  # a job runs long: stop at once
    for _ in range(40):
        prefetch.observe(0.02)
    assert 4 <= prefetch.size(0.0) <= 4 * MAX_WAIT / 2 / 0.02 + 1  # drained in ~max_wait/2
    for _ in range(40):
        prefetch.observe(0.3)
    assert prefetch.size(0.0) == 0  # long jobs lately: none


def test_a_fixed_prefetch_holds_still_and_zero_turns_it_off():
    assert Prefetch(threads=1, fixed=16, max_wait=MAX_WAIT).size(0.0) == 16
    assert Prefetch(threads=1, fixed=16, max_wait=MAX_WAIT).size(1.0) == 0
    off = Prefetch(threads=1, fixed=0, max_wait=MAX_WAIT)
    for _ in range(10):
        off.observe(0.001)
    assert off.size(0.0) == 0


def _enqueue_long_then_short(backend, long_seconds: float, short: int) -> tuple[int, list[int]]:
    """One commit: a long job first in claim order, then ``short`` quick ones."""
    backend.enqueue_many(
        [(slow_record, [long_seconds], {"label": "long"})]
        + [(slow_record, [0.0], {"label": "short"})] * short
    )
    ids = list(Job.objects.order_by("pk").values_list("pk", flat=True))
    return ids[0], ids[1:]


def _claimed(ids: list[int]) -> int:
    return Job.objects.filter(pk__in=ids, status="claimed").count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skip_locked
def test_jobs_claimed_ahead_behind_a_long_job_go_to_a_free_worker_within_the_bound(
    backend, child_env, manage_py, tmp_path
):
    """Worker A (1 thread) claims a long job and 8 short ones ahead; the short ones must not
    wait for the long one: A gives them back within SKIPQUEUE_PREFETCH_MAX_WAIT (plus a loop
    turn), without spending their attempt, and worker B runs them."""
    first = Runworkers(
        manage_py, child_env, tmp_path / "a.log",
        "--threads", "1", "--prefetch", "8", "--queues", "default",
    )  # fmt: skip
    second = None
    try:
        wait_for(lambda: "worker started" in first.log(), 60, what="worker A started")
        long_id, short_ids = _enqueue_long_then_short(backend, 8.0, 8)
        seen_claimed = wait_for(lambda: _claimed(short_ids) and time.monotonic(), 10, 0.005)
        given_back = wait_for(lambda: not _claimed(short_ids) and time.monotonic(), 10, 0.005)
        # The bound, with a generous margin for a loaded machine (the long job runs 8 s).
        assert given_back - seen_claimed < MAX_WAIT + 2.0
        assert Job.objects.get(pk=long_id).status == "claimed"
        assert set(Job.objects.filter(pk__in=short_ids).values_list("attempts", flat=True)) == {0}
        second = Runworkers(
            manage_py, child_env, tmp_path / "b.log",
            "--threads", "4", "--prefetch", "0", "--queues", "default",
        )  # fmt: skip
        wait_for(
            lambda: Job.objects.filter(pk__in=short_ids, status="succeeded").count() == 8,
            30,
            what="short jobs done by worker B",
        )
        assert Job.objects.get(pk=long_id).status == "claimed"  # still running on A
        shorts = Job.objects.filter(pk__in=short_ids)
        assert {job.attempts for job in shorts} == {1}
        long_owner = Job.objects.get(pk=long_id).owner
        assert all(job.worker_ids == [job.worker_ids[-1]] for job in shorts)
        assert long_owner not in {job.worker_ids[-1] for job in shorts}
        assert "gave back jobs claimed ahead jobs=8" in first.log()
    finally:
        first.stop()
        if second is not None:
            second.stop()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skip_locked
def test_a_stopping_worker_gives_back_the_jobs_it_claimed_ahead_at_once(
    backend, child_env, manage_py, tmp_path
):
    env = {**child_env, "SKIPQUEUE_PREFETCH_MAX_WAIT": "60"}  # nothing given back before
    worker = Runworkers(
        manage_py, env, tmp_path / "w.log",
        "--threads", "1", "--prefetch", "8", "--queues", "default", "--grace", "30",
    )  # fmt: skip
    try:
        wait_for(lambda: "worker started" in worker.log(), 60, what="worker started")
        long_id, short_ids = _enqueue_long_then_short(backend, 4.0, 8)
        wait_for(lambda: _claimed(short_ids) == 8, 10, what="all claimed")
        time.sleep(0.5)
        assert _claimed(short_ids) == 8  # held ahead, behind the long job
        worker.signal(signal.SIGTERM)
        began = time.monotonic()
        wait_for(lambda: not _claimed(short_ids), 10, 0.01, what="short jobs given back")
        assert time.monotonic() - began < 3.0  # not after the long job's 4 s
        assert Job.objects.get(pk=long_id).status == "claimed"
        shorts = Job.objects.filter(pk__in=short_ids)
        assert {(job.status, job.attempts) for job in shorts} == {("ready", 0)}
        assert worker.wait(60) == 0
        assert Job.objects.get(pk=long_id).status == "succeeded"
    finally:
        worker.stop()
