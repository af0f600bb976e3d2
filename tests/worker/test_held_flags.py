"""Which held jobs wait and which run, as the worker loop sees them through per-job flags."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from django_skipqueue.models import Job
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.tasks import task
from django_skipqueue.worker.executor import Executor
from django_skipqueue.worker.held import Holdings

pytestmark = pytest.mark.django_db(transaction=True)

GATE = threading.Event()


@task
def gated() -> str:
    """Hold the job's thread until the test opens the gate."""
    GATE.wait(10)
    return "through"


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_jobs_behind_a_busy_thread_are_ahead_until_a_thread_takes_them(
    backend, close_thread_connections
):
    GATE.clear()
    backend.enqueue_many([(gated, [], {})] * 3)
    jobs = Job.objects.claim(["default"], limit=3, owner="w")
    holdings = Holdings("w", "default", "default", Metrics())
    executor = Executor(1, "default", "default", holdings.on_done)
    try:
        first, second, third = running = [holdings.hold(job) for job in jobs]
        for held in running:
            executor.submit(held, gated)
        wait_for(lambda: first.started_at is not None)
        assert holdings.ahead(1) == [second, third]
        assert holdings.ahead(2) == [third]
        assert holdings.longest_run() > 0
        assert not (second.begun or second.ended)
        GATE.set()
        wait_for(lambda: third.ended)
        holdings.collect()
        assert [outcome.status for outcome in holdings.unrecorded] == ["succeeded"] * 3
        assert [outcome.return_value for outcome in holdings.unrecorded] == ["through"] * 3
        assert all(held.begun and held.ended for held in running)
        assert holdings.ahead(1) == [] and holdings.longest_run() == 0.0
    finally:
        GATE.set()
        executor.shutdown()


def test_a_job_taken_off_the_executor_before_it_began_is_never_reported(
    backend, close_thread_connections
):
    GATE.clear()
    backend.enqueue_many([(gated, [], {})] * 2)
    jobs = Job.objects.claim(["default"], limit=2, owner="w")
    holdings = Holdings("w", "default", "default", Metrics())
    executor = Executor(1, "default", "default", holdings.on_done)
    try:
        first, second = running = [holdings.hold(job) for job in jobs]
        for held in running:
            executor.submit(held, gated)
        wait_for(lambda: first.started_at is not None)
        holdings.unstart()
        assert holdings.unstarted == [second] and list(holdings.held.values()) == [first]
        GATE.set()
        wait_for(lambda: first.ended)
        time.sleep(0.05)
        holdings.collect()
        assert [outcome.job.pk for outcome in holdings.unrecorded] == [first.job.pk]
        assert not second.begun
    finally:
        GATE.set()
        executor.shutdown()
