"""The reaper and the promotion: expired leases come back once, live ones and completions stay."""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import timedelta

import pytest
from django.db import connections, transaction
from django.db.models import Sum
from django.test import override_settings
from django.utils import timezone

from django_skipqueue import transitions
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.maintenance import reap as reaper
from django_skipqueue.maintenance.promote import promote
from django_skipqueue.models import Job, MaintenanceRun, QueueMinute
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


def claim_one(owner: str = "w1", *, lease: float = 60, **options) -> Job:
    noop.using(**options).enqueue() if options else noop.enqueue()
    [job] = Job.objects.claim(["default"], limit=1, owner=owner, lease=lease)
    return job


def expire(*jobs: Job, seconds_ago: float = 1) -> None:
    """Move the lease of ``jobs`` into the past, by the database clock."""
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(
        lease_until=DatabaseNowPlus(-seconds_ago)
    )


def test_an_expired_lease_goes_back_with_backoff_and_a_live_one_is_untouched():
    dead = claim_one("dead-worker", max_attempts=3)
    live = claim_one("live-worker")
    expire(dead)

    result = reaper.reap(runner="reaper-1")

    assert (result.reclaimed, result.retried, result.failed) == (1, 1, 0)
    dead.refresh_from_db()
    assert (dead.status, dead.owner, dead.lease_until, dead.attempts) == (
        "scheduled", None, None, 1,
    )  # fmt: skip
    assert dead.run_after > timezone.now()
    assert dead.worker_ids == ["dead-worker"]
    [error] = dead.errors
    assert error["exception_class_path"] == "django_skipqueue.exceptions.LeaseExpired"
    assert "dead-worker" in error["traceback"]
    before = (live.status, live.owner, live.lease_until, live.attempts)
    live.refresh_from_db()
    assert (live.status, live.owner, live.lease_until, live.attempts) == before
    counted = QueueMinute.objects.filter(owner="reaper:reaper-1", queue_name="default")
    assert counted.aggregate(n=Sum("reclaimed"))["n"] == 1
    run = MaintenanceRun.objects.get(task="reap")
    assert run.runner == "reaper-1" and run.last_result["reclaimed"] == 1


def test_spent_attempts_end_failed_and_a_requested_cancel_ends_cancelled():
    spent = claim_one("w", max_attempts=1)
    cancelling = claim_one("w", max_attempts=5)
    Job.objects.filter(pk=cancelling.pk).update(cancel_requested=True)
    expire(spent, cancelling)

    result = reaper.reap(runner="r")

    assert (result.failed, result.cancelled, result.retried) == (1, 1, 0)
    spent.refresh_from_db()
    cancelling.refresh_from_db()
    assert spent.status == "failed" and spent.finished_at is not None
    assert cancelling.status == "cancelled" and cancelling.finished_at is not None
    minute = QueueMinute.objects.get(owner="reaper:r")
    assert (minute.reclaimed, minute.failed) == (2, 1)


@override_settings(SKIPQUEUE_RETRY_BACKOFF=0)
def test_without_backoff_a_reclaimed_job_is_ready_and_claimable_again():
    job = claim_one("w1")
    expire(job)
    reaper.reap()
    [again] = Job.objects.claim(["default"], limit=1, owner="w2")
    assert (again.pk, again.attempts, again.owner) == (job.pk, 2, "w2")
    assert again.worker_ids == ["w1"]


def test_promote_makes_due_jobs_ready_and_leaves_future_ones():
    due = noop.using(run_after=timezone.now() + timedelta(seconds=1)).enqueue()
    future = noop.using(run_after=timezone.now() + timedelta(hours=1)).enqueue()
    assert promote() == 0
    Job.objects.filter(pk=due.id).update(run_after=DatabaseNowPlus(-1))
    assert promote(batch=1) == 1
    assert Job.objects.get(pk=due.id).status == "ready"
    assert Job.objects.get(pk=future.id).status == "scheduled"


def test_promote_goes_through_many_batches():
    from tests.support.bulkfill import insert_jobs

    insert_jobs(250, status="scheduled", run_after_seconds=-5)
    assert promote(batch=20) == 250
    assert Job.objects.ready().count() == 250


@pytest.mark.skip_locked
def test_two_reapers_at_once_reclaim_each_job_exactly_once(close_thread_connections):
    from tests.support.bulkfill import insert_jobs

    insert_jobs(2000, status="claimed")
    Job.objects.update(owner="dead", attempts=1, lease_until=DatabaseNowPlus(-10))
    results: dict[str, reaper.ReapResult] = {}
    barrier = threading.Barrier(2)

    def run(name: str) -> None:
        try:
            barrier.wait()
            results[name] = reaper.reap(batch=10, runner=name)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(name,)) for name in ("r1", "r2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert results["r1"].reclaimed + results["r2"].reclaimed == 2000
    assert results["r1"].reclaimed > 0 and results["r2"].reclaimed > 0, "both reapers worked"
    assert Job.objects.claimed().count() == 0
    errors = Job.objects.values_list("errors", "worker_ids")
    assert all(len(e) == 1 and w == ["dead"] for e, w in errors), "each job reclaimed once"
    assert QueueMinute.objects.aggregate(n=Sum("reclaimed"))["n"] == 2000


@pytest.mark.skip_locked
def test_a_completion_in_flight_is_skipped_by_the_reaper_and_kept(close_thread_connections):
    job = claim_one("slow-worker")
    expire(job)
    completing, release = threading.Event(), threading.Event()

    def complete_slowly() -> None:
        try:
            with transaction.atomic():
                assert transitions.succeed(job, "late but done")
                completing.set()
                release.wait(10)
        finally:
            connections.close_all()

    worker = threading.Thread(target=complete_slowly)
    worker.start()
    try:
        assert completing.wait(10)
        assert reaper.reap().reclaimed == 0, "the row being completed is skipped"
    finally:
        release.set()
        worker.join()
    assert reaper.reap().reclaimed == 0
    job.refresh_from_db()
    assert (job.status, job.return_value, job.errors) == ("succeeded", "late but done", [])


def test_the_fence_keeps_a_completion_that_landed_after_the_reaper_read_the_row():
    job = claim_one("slow-worker")
    expire(job)
    stale = dict(
        zip(
            reaper.REAP_FIELDS,
            Job.objects.expired().values_list(*reaper.REAP_FIELDS).get(),
            strict=True,
        )
    )
    assert transitions.succeed(job, "done")
    step = reaper.ReapResult()
    reaper._reclaim("default", stale, "r", step)
    assert (step.reclaimed, step.fenced) == (0, 1)
    job.refresh_from_db()
    assert (job.status, job.return_value) == ("succeeded", "done")


def test_a_renewed_lease_is_fenced_off():
    job = claim_one("w")
    expire(job)
    stale = dict(
        zip(
            reaper.REAP_FIELDS,
            Job.objects.expired().values_list(*reaper.REAP_FIELDS).get(),
            strict=True,
        )
    )
    Job.objects.filter(pk=job.pk).update(lease_until=DatabaseNowPlus(60))  # a heartbeat
    step = reaper.ReapResult()
    reaper._reclaim("default", stale, "r", step)
    assert step.fenced == 1
    assert Job.objects.get(pk=job.pk).status == "claimed"


def test_a_worker_completing_after_the_reap_loses_its_lease():
    job = claim_one("late-worker")
    expire(job)
    assert reaper.reap().reclaimed == 1
    assert transitions.succeed(job, "too late") is False
    job.refresh_from_db()
    assert job.status == "scheduled" and job.return_value is None


def test_reap_command_once_prints_its_figures(manage_py, child_env):
    job = claim_one("w", max_attempts=1)
    expire(job)
    out = subprocess.run(
        [*manage_py, "skipqueue_reap", "--json"], env=child_env, capture_output=True,
        text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert '"reclaimed": 1' in out and '"failed": 1' in out
    assert Job.objects.get(pk=job.pk).status == "failed"


@pytest.mark.slow
def test_the_reap_loop_reclaims_within_one_interval(manage_py, child_env):
    live = claim_one("live-worker", lease=600)
    job = claim_one("dying-worker", lease=600)
    loop = subprocess.Popen(
        [*manage_py, "skipqueue_reap", "--interval", "1"], env=child_env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: MaintenanceRun.objects.filter(task="reap").exists(), 30)
        expire(job, seconds_ago=0)
        expired_at = time.monotonic()
        wait_for(lambda: Job.objects.get(pk=job.pk).status != "claimed", 10)
        waited = time.monotonic() - expired_at
        # The loop goes on: two more passes (their pace under load is not what this checks).
        passes = MaintenanceRun.objects.filter(task="reap", runs__gte=3)
        wait_for(passes.exists, 15)
    finally:
        loop.terminate()
        output, _ = loop.communicate(timeout=30)
    assert loop.returncode == 0, output
    assert waited < 1 + 1.5, f"reclaimed after {waited:.2f}s with a 1s interval"
    assert Job.objects.get(pk=live.pk).status == "claimed"


def wait_for(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
