"""Acceptance: SIGTERM/SIGINT stop gracefully within --grace; a second signal or SIGQUIT: now."""

from __future__ import annotations

import signal
import time

import pytest
from django.db.models import Count

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from tests import worker_tasks as wt
from tests.workers import Runworkers, status_counts, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]


def start(manage_py, child_env, tmp_path, *args: str) -> Runworkers:
    workers = Runworkers(
        manage_py, child_env, tmp_path / "workers.log", "--queues", "default", *args
    )
    wait_for(lambda: WorkerProcess.objects.filter(role="worker").exists(), timeout=60)
    return workers


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_under_load_exits_0_within_grace_with_nothing_left_claimed(
    signum, backend, child_env, manage_py, tmp_path
):
    backend.enqueue_many([(wt.slow_record, [0.05], {})] * 2000)
    workers = start(manage_py, child_env, tmp_path, "--processes", "2", "--threads", "4",
                    "--grace", "10")  # fmt: skip
    try:
        wait_for(lambda: Job.objects.filter(status="succeeded").count() >= 50, timeout=60)
        signalled = time.monotonic()
        workers.signal(signum)
        code = workers.wait(timeout=30)
        took = time.monotonic() - signalled
    finally:
        workers.stop()
    assert code == 0, workers.log()[-3000:]
    assert took < 10, f"took {took:.1f} s, over the 10 s grace"
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
def test_a_second_signal_or_sigquit_gives_everything_back_at_once(
    signals, backend, child_env, manage_py, tmp_path
):
    results = backend.enqueue_many([(wt.slow_record, [60], {})] * 4)
    workers = start(manage_py, child_env, tmp_path, "--processes", "1", "--threads", "4",
                    "--grace", "60")  # fmt: skip
    try:
        wait_for(lambda: Job.objects.claimed().count() == 4, timeout=60)
        signalled = time.monotonic()
        for signum in signals:
            workers.signal(signum)
            time.sleep(0.3)
        code = workers.wait(timeout=20)
        took = time.monotonic() - signalled
    finally:
        workers.stop()
    assert code == 0, workers.log()[-3000:]
    assert took < 5
    jobs = Job.objects.filter(pk__in=[r.id for r in results])
    assert {(job.status, job.attempts, job.owner) for job in jobs} == {("ready", 0, None)}


def test_jobs_still_running_when_grace_ends_are_given_back(
    backend, child_env, manage_py, tmp_path
):
    result = wt.slow_record.enqueue(60)
    quick = wt.slow_record.enqueue(0.5)
    workers = start(manage_py, child_env, tmp_path, "--processes", "1", "--threads", "2",
                    "--grace", "2")  # fmt: skip
    try:
        wait_for(lambda: Job.objects.claimed().count() == 2, timeout=60)
        signalled = time.monotonic()
        workers.signal(signal.SIGTERM)
        code = workers.wait(timeout=20)
        took = time.monotonic() - signalled
    finally:
        workers.stop()
    assert code == 0 and 1.5 < took < 5
    assert Job.objects.get(pk=quick.id).status == "succeeded"  # finished within grace
    slow = Job.objects.get(pk=result.id)
    assert (slow.status, slow.attempts) == ("ready", 0)
    assert "released=1" in workers.log()
