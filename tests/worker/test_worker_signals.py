"""Acceptance: SIGTERM/SIGINT stop gracefully within --grace; a second signal or SIGQUIT: now."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from django.db.models import Count

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.workers import Runworkers, status_counts, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skip_locked,
    pytest.mark.vendor_neutral,
]


#: A process start on a loaded 2-core machine can take a minute; waiting longer costs nothing.
START_TIMEOUT = 240


def began(started_dir: Path, count: int) -> None:
    """Wait until ``count`` tasks have begun (each leaves a file there as it starts)."""
    wait_for(lambda: len(list(started_dir.iterdir())) >= count, START_TIMEOUT, what="tasks begun")


def start(manage_py, child_env, tmp_path, *args: str) -> Runworkers:
    workers = Runworkers(
        manage_py, child_env, tmp_path / "workers.log", "--queues", "default", *args
    )
    wait_for(lambda: WorkerProcess.objects.filter(role="worker").exists(), START_TIMEOUT)
    return workers


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_under_load_exits_0_within_grace_with_nothing_left_claimed(
    signum, backend, child_env, manage_py, tmp_path
):
    backend.enqueue_many([(wt.slow_record, [0.05], {})] * 2000)
    # Jobs of 0.05 s: a stop takes as long as the running ones plus the exit, far below the
    # 60 s grace even when the machine is loaded; waiting out the grace would take 60 s.
    workers = start(manage_py, child_env, tmp_path, "--processes", "2", "--threads", "4",
                    "--grace", "60")  # fmt: skip
    try:
        wait_for(lambda: Job.objects.filter(status="succeeded").count() >= 50, timeout=120)
        signalled = time.monotonic()
        workers.signal(signum)
        code = workers.wait(timeout=90)
        took = time.monotonic() - signalled
    finally:
        workers.stop()
    assert code == 0, workers.log()[-3000:]
    assert took < 30, f"took {took:.1f} s: it waited for the 60 s grace"
    counts = status_counts()
    assert set(counts) == {"succeeded", "ready"} and counts["ready"] > 0
    assert not Job.objects.filter(status="ready", attempts__gt=0).exists()  # none spent
    per_job = LedgerEntry.objects.values("job_id").annotate(n=Count("id"))
    assert not per_job.filter(n__gt=1).exists()
    finished = set(Job.objects.filter(status="succeeded").values_list("pk", flat=True))
    assert set(LedgerEntry.objects.values_list("job_id", flat=True)) == finished
    assert not WorkerProcess.objects.filter(stopped_at__isnull=True).exists()


@pytest.mark.parametrize(
    "signals", [(signal.SIGTERM, signal.SIGTERM), (signal.SIGQUIT,)], ids=["twice", "quit"]
)
def test_a_second_signal_or_sigquit_stops_at_once_and_records_the_interrupted_attempts(
    signals, backend, child_env, manage_py, tmp_path
):
    """Django: started_at is "the time when the Task began execution, on its first attempt",
    worker_ids "the workers which have executed the Task": a stop must not erase an attempt
    that ran (it may have done part of its work)."""
    started_dir = tmp_path / "started"
    started_dir.mkdir()
    results = backend.enqueue_many([(wt.announced_record, [60, str(started_dir)], {})] * 6)
    workers = start(manage_py, child_env, tmp_path, "--processes", "1", "--threads", "4",
                    "--grace", "60")  # fmt: skip
    try:
        began(started_dir, 4)  # the 4 threads have begun their tasks
        assert Job.objects.claimed().count() == 4
        owner = Job.objects.claimed().values_list("owner", flat=True).first()
        signalled = time.monotonic()
        for signum in signals:
            workers.signal(signum)
            time.sleep(0.3)
        code = workers.wait(timeout=50)
        took = time.monotonic() - signalled
    finally:
        workers.stop()
    assert code == 0, workers.log()[-3000:]
    # At once: not after the 60 s grace nor the 60 s jobs (a loaded machine adds seconds).
    assert took < 20, f"took {took:.1f} s"
    jobs = list(Job.objects.filter(pk__in=[r.id for r in results]).order_by("pk"))
    ran, waited = jobs[:4], jobs[4:]
    assert {(job.status, job.attempts, job.owner) for job in waited} == {("ready", 0, None)}
    assert {(job.status, job.attempts, job.owner) for job in ran} == {("ready", 1, None)}
    assert all(job.started_at is not None and job.worker_ids == [owner] for job in ran)
    assert {job.errors[-1]["exception_class_path"] for job in ran} == {
        "django_skipqueue.exceptions.WorkerStopped"
    }
    result = results[0]
    result.refresh()
    assert (result.attempts, result.worker_ids) == (1, [owner]) and result.started_at
    assert "released=0 interrupted=4" in workers.log()


def test_jobs_still_running_when_grace_ends_are_given_back_as_interrupted_attempts(
    backend, child_env, manage_py, tmp_path
):
    started_dir = tmp_path / "started"
    started_dir.mkdir()
    result = wt.announced_record.enqueue(60, str(started_dir))
    quick = wt.announced_record.enqueue(3, str(started_dir))
    workers = start(manage_py, child_env, tmp_path, "--processes", "1", "--threads", "2",
                    "--grace", "6")  # fmt: skip
    try:
        began(started_dir, 2)  # both tasks have begun: the 3 s one runs into the stop
        signalled = time.monotonic()
        workers.signal(signal.SIGTERM)
        code = workers.wait(timeout=50)
        took = time.monotonic() - signalled
    finally:
        workers.stop()
    # It waited for the 6 s grace, then gave the 60 s job back instead of waiting for it (a
    # loaded machine adds seconds to the stop, never the 50 s the job had left).
    assert code == 0 and 5.5 < took < 30, took
    assert Job.objects.get(pk=quick.id).status == "succeeded"  # finished within grace
    slow = Job.objects.get(pk=result.id)
    assert (slow.status, slow.attempts, slow.owner) == ("ready", 1, None)
    assert slow.started_at is not None and len(slow.worker_ids) == 1
    assert "grace of 6 s over" in slow.errors[-1]["traceback"]
    assert "released=0 interrupted=1" in workers.log()


def test_a_graceful_stop_lets_a_running_coroutine_finish(backend, child_env, manage_py, tmp_path):
    """A coroutine's future can be cancelled while it runs: the stop must not take it back."""
    started_dir = tmp_path / "started"
    started_dir.mkdir()
    result = wt.announced_nap.enqueue(5, str(started_dir))
    workers = start(manage_py, child_env, tmp_path, "--threads", "1", "--grace", "20")
    try:
        began(started_dir, 1)  # the 5 s coroutine is running
        workers.signal(signal.SIGTERM)
        code = workers.wait(timeout=30)
    finally:
        workers.stop()
    assert code == 0, workers.log()[-3000:]
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.return_value) == ("succeeded", 1, "rested")
