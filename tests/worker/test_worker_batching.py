"""The worker's hot path: full batches, few wake-ups, claimed rows read as the ORM reads them."""

from __future__ import annotations

import threading
import time

import pytest

from django_skipqueue import wakeup
from django_skipqueue.models import Job
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.wakeup import Waker
from django_skipqueue.worker import loop
from django_skipqueue.worker.executor import Outcome
from django_skipqueue.worker.held import Holdings
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from tests.support.tasks import echo


def _took(call) -> float:
    began = time.monotonic()
    call()
    return time.monotonic() - began


def test_a_nudge_wakes_only_a_sleeper_and_ready_work_skips_the_sleep():
    waker = Waker(None)
    try:
        waker.nudge()  # nobody sleeps: no ring is left behind for the next wait
        assert _took(lambda: waker.wait(0.2, listen=False)) >= 0.15
        # Far below the 30 s asked for (a loaded machine may add a second or two).
        assert _took(lambda: waker.wait(30, listen=False, ready=lambda: True)) < 10
        threading.Timer(0.05, waker.nudge).start()
        assert _took(lambda: waker.wait(30, listen=False)) < 10  # a sleeper is woken
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


def _worker_with_a_job_back_and_one_about_to_start() -> tuple[Worker, list[float]]:
    """A worker whose loop was woken by a finished job while another one is about to start."""
    worker = Worker(WorkerOptions(queues=("default",), threads=4, wakeup=False), owner=owner_id())
    back = worker.jobs.hold(Job(pk=1))
    worker.jobs.unrecorded.append(Outcome(back, "succeeded"))
    worker.jobs.hold(Job(pk=2))  # not started yet: counts as just begun, whatever the load
    waits: list[float] = []
    wait = worker.waker.wait
    worker.waker.wait = lambda timeout, **kwargs: waits.append(timeout) or wait(timeout, **kwargs)
    return worker, waits


def _stop(worker: Worker) -> None:
    worker.waker.close()
    worker.executor.shutdown()


def test_the_batch_wait_is_bounded(monkeypatch):
    # A fill of 0.2 s rather than the 1 ms near the database: a loaded machine that deschedules
    # the loop for over 1 ms between setting the deadline and waiting rightly skips the wait.
    fill = 0.2
    monkeypatch.setattr(loop, "batch_fill_seconds", lambda using: fill)
    worker, waits = _worker_with_a_job_back_and_one_about_to_start()
    try:
        assert _took(worker._let_batch_fill) < fill + 2  # not an endless wait
        assert waits and all(0 < timeout <= fill for timeout in waits)
    finally:
        _stop(worker)


@pytest.mark.parametrize("why", ["signal", "quiet queue", "nothing finished"])
def test_no_batch_wait_for_a_signal_a_quiet_queue_or_new_work(why):
    worker, waits = _worker_with_a_job_back_and_one_about_to_start()
    try:
        if why == "signal":
            worker.stopping.signals.append(wakeup.STOP_SIGNALS[0])
        elif why == "quiet queue":
            worker.claimer.idle.claimed(1, 4)  # the last claim got fewer jobs than it asked for
        else:
            worker.jobs.unrecorded.clear()  # a wake-up datagram, not a finished job, woke it
        worker._let_batch_fill()
        assert waits == []
    finally:
        _stop(worker)


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
