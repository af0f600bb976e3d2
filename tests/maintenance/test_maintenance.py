"""The maintenance loop: its timers, the scheduled purge, and runworkers running it."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from django.test import override_settings

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.maintenance.loop import Maintenance
from django_skipqueue.models import Job, MaintenanceRun, WorkerProcess
from django_skipqueue.monitoring.stats import queue_status
from tests.support.bulkfill import insert_jobs
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)
DAY = 86_400


@override_settings(SKIPQUEUE_PURGE_RETENTION={"succeeded": "7d"}, SKIPQUEUE_PURGE_CHUNK=500)
def test_each_turn_runs_what_is_due_and_the_scheduled_purge_goes_on_across_turns():
    insert_jobs(4000, status="succeeded", finished_seconds_ago=8 * DAY)
    insert_jobs(5, status="scheduled", run_after_seconds=-1)
    loop = Maintenance(reap_interval=60, promote_interval=60, purge_interval=3600, runner="m1")
    with override_settings(SKIPQUEUE_PURGE_SLEEP=0.3):
        wait = loop.run_due()
    assert Job.objects.ready().count() == 5, "promoted"
    assert MaintenanceRun.objects.get(task="reap").runner == "m1"
    left = Job.objects.filter(status="succeeded").count()
    assert 0 < left < 4000, "a slice of the purge, not all of it, in one turn"
    assert wait <= 1.0, "an unfinished purge comes back soon"
    for _ in range(20):
        if not Job.objects.filter(status="succeeded").exists():
            break
        time.sleep(min(loop.run_due(), 1.0))
    assert not Job.objects.filter(status="succeeded").exists()
    purge = queue_status("default", ["default"]).purge
    assert purge["runner"] == "m1" and purge["last_result"]["deleted"] == 4000
    [purge_timer] = [timer for timer in loop.timers if timer.name == "purge"]
    assert 3000 < purge_timer.due_at - time.monotonic() <= 3600, "next purge in an hour"


def test_a_failing_step_does_not_stop_the_loop(monkeypatch):
    from django.db import OperationalError

    loop = Maintenance(reap_interval=60, promote_interval=60, runner="m2")

    def broken() -> int:
        raise OperationalError("server has gone away")

    monkeypatch.setattr(loop.timers[0], "step", broken)
    loop.run_due()
    assert MaintenanceRun.objects.get(task="reap").runner == "m2", "the next step still ran"


@pytest.mark.slow
def test_runworkers_reaps_expired_leases_on_its_timer(manage_py, child_env):
    noop.enqueue()
    [job] = Job.objects.claim(["default"], limit=1, owner="crashed-host:1:dead", lease=600)
    Job.objects.filter(pk=job.pk).update(lease_until=DatabaseNowPlus(-1))
    workers = subprocess.Popen(
        [*manage_py, "runworkers", "--processes", "1", "--threads", "1"], env=child_env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while Job.objects.get(pk=job.pk).status == "claimed":
            assert time.monotonic() < deadline and workers.poll() is None
            time.sleep(0.1)
    finally:
        workers.send_signal(signal.SIGTERM)
        output, _ = workers.communicate(timeout=60)
    job.refresh_from_db()
    assert job.worker_ids[0] == "crashed-host:1:dead", output
    assert job.errors[0]["exception_class_path"].endswith("LeaseExpired")
    supervisor = WorkerProcess.objects.get(role="supervisor")
    assert MaintenanceRun.objects.get(task="reap").runner == supervisor.owner
