"""The worker's hot path: full batches, few wake-ups, claimed rows read as the ORM reads them."""

from __future__ import annotations

import threading
import time

import pytest

from django_skipqueue import stopping
from django_skipqueue.executor import Outcome
from django_skipqueue.holdings import Holdings
from django_skipqueue.metrics import Metrics
from django_skipqueue.models import Job
from django_skipqueue.options import WorkerOptions
from django_skipqueue.owner import owner_id
from django_skipqueue.wakeup import Waker
from django_skipqueue.worker import BATCH_FILL_SECONDS, Worker
from tests.tasks import echo


def _took(call) -> float:
    began = time.monotonic()
    call()
    return time.monotonic() - began


def test_a_nudge_wakes_only_a_sleeper_and_ready_work_skips_the_sleep():
    waker = Waker(None)
    try:
        waker.nudge()  # nobody sleeps: no ring is left behind for the next wait
        assert _took(lambda: waker.wait(0.2, listen=False)) >= 0.15
        assert _took(lambda: waker.wait(5, listen=False, ready=lambda: True)) < 1
        threading.Timer(0.05, waker.nudge).start()
        assert _took(lambda: waker.wait(5, listen=False)) < 1  # a sleeper is woken
    finally:
        waker.close()


def test_just_started_means_every_job_still_running_began_moments_ago():
    holdings = Holdings("w", "default", "default", Metrics())
    young, old = holdings.hold(Job(pk=1)), holdings.hold(Job(pk=2))
    young.started_at, old.started_at = time.monotonic(), time.monotonic() - 1
    assert not holdings.just_started(0.5)  # one has run for a second
    holdings.unrecorded.append(Outcome(old, "succeeded"))
    assert holdings.just_started(0.5)  # the old one is back, the young one runs
    young.started_at = None
    assert holdings.just_started(0.5)  # about to start counts as just started
    holdings.unrecorded.append(Outcome(young, "succeeded"))
    assert not holdings.just_started(0.5)  # nothing runs: nothing to wait for


def _worker_holding_a_job_that_just_began() -> Worker:
    worker = Worker(WorkerOptions(queues=("default",), threads=4, wakeup=False), owner=owner_id())
    worker.jobs.hold(Job(pk=1)).started_at = time.monotonic()
    return worker


def test_the_batch_wait_is_bounded_and_ends_at_once_for_a_signal():
    worker = _worker_holding_a_job_that_just_began()
    try:
        assert _took(worker._let_batch_fill) < BATCH_FILL_SECONDS + 0.2
        worker.stopping.signals.append(stopping.STOP_SIGNALS[0])
        began = time.monotonic()
        worker._let_batch_fill()
        assert time.monotonic() - began < BATCH_FILL_SECONDS  # it did not wait
    finally:
        worker.waker.close()
        worker.executor.shutdown()


@pytest.mark.django_db
def test_claimed_jobs_are_read_exactly_as_the_orm_reads_them():
    for number in range(3):
        echo.enqueue(number, note={"n": [number]})
    claimed = Job.objects.claim(["default"], limit=3, owner="w")
    assert len(claimed) == 3
    for job in claimed:
        assert _values(job) == _values(Job.objects.get(pk=job.pk))
        assert (job.kwargs, job.status, job.owner) == ({"note": {"n": job.args}}, "claimed", "w")


def _values(job: Job) -> dict[str, object]:
    return {field.attname: getattr(job, field.attname) for field in Job._meta.concrete_fields}
