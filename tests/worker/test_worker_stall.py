"""Acceptance: a worker frozen (SIGSTOP) past its lease loses the job to another worker; once it
runs again (SIGCONT), the fence rejects its stale completion, and the rejection is counted."""

from __future__ import annotations

import os
import signal

import pytest

from django_skipqueue.models import Job, WorkerProcess
from django_skipqueue.worker.owner import pid_of
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.workers import Runworkers, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]


def worker_row(supervisor: Runworkers) -> WorkerProcess:
    return wait_for(
        lambda: WorkerProcess.objects.filter(
            role="worker", supervisor__contains=f":{supervisor.process.pid}:"
        ).first(),
        timeout=60,
    )


def test_a_stale_completion_is_rejected_after_another_worker_finished_the_job(
    child_env, manage_py, tmp_path
):
    args = ("--processes", "1", "--threads", "2", "--queues", "default")
    first = Runworkers(manage_py, child_env, tmp_path / "first.log", *args)
    second = None
    try:
        frozen = worker_row(first)
        plain = wt.slow_record.using(lease=2).enqueue(3, label="plain")
        exactly_once = wt.slow_record_tx.using(lease=2).enqueue(3, label="tx")
        ids = [plain.id, exactly_once.id]
        held = Job.objects.filter(pk__in=ids, owner=frozen.owner, status="claimed")
        wait_for(lambda: held.count() == 2, 60, what="both jobs claimed by the first worker")
        # Freeze it once it holds them: a renewed lease shows it has read its claim and runs
        # the jobs (a worker frozen between its claim's commit and that read gets nothing).
        claimed_until = dict(held.values_list("pk", "lease_until"))
        renewed = held.filter(lease_until__gt=max(claimed_until.values()))
        wait_for(lambda: renewed.count() == 2, 10, what="both leases renewed")
        os.kill(frozen.pid, signal.SIGSTOP)

        second = Runworkers(manage_py, child_env, tmp_path / "second.log", *args)
        done = Job.objects.filter(pk__in=ids, status="succeeded")
        # Reaped (SKIPQUEUE_REAP_INTERVAL), claimed again by the second worker, finished.
        wait_for(lambda: done.count() == 2, timeout=90, what="both jobs finished elsewhere")
        winners = set(done.values_list("owner", flat=True))
        assert frozen.owner not in winners and len(winners) == 1

        os.kill(frozen.pid, signal.SIGCONT)
        stale = WorkerProcess.objects.filter(pk=frozen.pk, lost_leases=2)
        wait_for(stale.exists, timeout=60, what="two lost leases counted")
        for runner in (first, second):
            runner.signal(signal.SIGTERM)
            assert runner.wait(timeout=30) == 0
    finally:
        first.stop()
        if second is not None:
            second.stop()

    [winner] = winners
    for job in Job.objects.filter(pk__in=ids):  # the winner's outcome stands
        assert (job.status, job.owner, job.attempts) == ("succeeded", winner, 2)
        assert job.errors[0]["exception_class_path"].endswith("LeaseExpired")
        assert LedgerEntry.objects.get(pk=job.return_value).worker == winner
    # The plain task ran twice (at-least-once); the transactional one wrote exactly once:
    # the stale run's writes rolled back with its rejected completion.
    assert sorted(LedgerEntry.objects.values_list("label", "worker")) == sorted(
        [("plain", frozen.owner), ("plain", winner), ("tx", winner)]
    )
    assert "status=lost" in first.log() and pid_of(frozen.owner) == frozen.pid
