"""Leases live on the database's clock: a worker or reaper with a skewed clock changes nothing.

Processes run under ``faketime`` (libfaketime, LD_PRELOAD), two hours ahead or behind the
database server. If a lease were computed from the worker's clock, a slow clock would make
every lease look expired (reaped while alive) and a fast one would keep a dead worker's jobs
for hours; a reaper with a skewed clock would reap live leases or miss expired ones.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.models import Job, QueueMinute
from testproject.demo.models import LedgerEntry
from tests.reliability import tasks
from tests.reliability.procs import MANAGE, STARTUP, Supervisor, kill_quietly, wait_for
from tests.support.tasks import noop

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skip_locked,
    pytest.mark.skipif(shutil.which("faketime") is None, reason="needs faketime (apt)"),
]

SKEWS = ["+2h", "-2h"]


def skewed(skew: str) -> tuple[str, ...]:
    return ("faketime", "-f", skew)


def skewed_env(env: dict[str, str]) -> dict[str, str]:
    """Only the wall clock is wrong, as on a host whose NTP failed; intervals stay true.

    With a faked monotonic clock, libfaketime 0.9.10 makes every timed wait on a lock hang;
    with a true one (this setting), time.sleep() fails with EINVAL (clock_nanosleep), so the
    tasks these tests run wait with Event.wait() instead (tasks.pause).
    """
    return {**env, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def assert_clock_is_skewed(skew: str, env: dict[str, str]) -> None:
    """The prefix really shifts a Python child's clock (else the test would prove nothing)."""
    out = subprocess.run(
        [*skewed(skew), sys.executable, "-c", "import time; print(time.time())"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    shift = float(out) - time.time()
    assert abs(shift - (7200 if skew.startswith("+") else -7200)) < 60, shift


def lease_left(pk: int) -> float | None:
    """Seconds from the database's now to the job's lease end, computed by the database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until) / 1e6 "
            "FROM skipqueue_job WHERE id = %s AND status = 'claimed'",
            [pk],
        )
        row = cursor.fetchone()
    return None if row is None or row[0] is None else float(row[0])


@pytest.mark.mysql
@pytest.mark.parametrize("skew", SKEWS)
def test_a_reaper_with_a_skewed_clock_reaps_expired_leases_only(skew, rel_env, figures):
    env = skewed_env(rel_env())
    assert_clock_is_skewed(skew, env)
    for _ in range(2):
        noop.enqueue()
    live, expired = Job.objects.claim(["default"], limit=2, owner="w", lease=600)
    Job.objects.filter(pk=expired.pk).update(lease_until=DatabaseNowPlus(-5))

    out = subprocess.run(
        [*skewed(skew), *MANAGE, "skipqueue_reap", "--json"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    figures.update(skew=skew, reaper=out.strip())
    assert '"reclaimed": 1' in out
    assert Job.objects.get(pk=expired.pk).status != "claimed"
    assert Job.objects.get(pk=live.pk).status == "claimed"


@pytest.mark.mysql
@pytest.mark.parametrize("skew", SKEWS)
def test_a_worker_with_a_skewed_clock_renews_by_the_database_clock(
    skew, rel_env, tmp_path, figures
):
    """A 5 s job on a 2 s lease, a reaper every 0.5 s: the skewed worker keeps it alive."""
    env = skewed_env(rel_env(HEARTBEAT_SECONDS=0.5))
    result = tasks.record_then_hold.enqueue(seconds=5)
    reaper = subprocess.Popen(
        [*MANAGE, "skipqueue_reap", "--interval", "0.5"], env=rel_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    worker = Supervisor(
        env, tmp_path / "runworkers.log",
        "--processes", "1", "--threads", "1", "--lease", "2", "--burst", "--queues", "default",
        prefix=skewed(skew),
    )  # fmt: skip
    leases: list[float] = []
    try:
        wait_for(lambda: lease_left(int(result.id)) is not None, STARTUP)
        while (left := lease_left(int(result.id))) is not None:
            leases.append(left)
            time.sleep(0.2)
        assert worker.wait(timeout=60) == 0, worker.log()[-3000:]
    finally:
        reaper.send_signal(signal.SIGTERM)
        reaper.wait(30)
    job = Job.objects.get(pk=result.id)
    minutes = list(
        QueueMinute.objects.filter(owner=job.worker_ids[0]).values_list("minute", flat=True)
    )
    db_now = Job.objects.values_list("finished_at", flat=True).get(pk=job.pk)
    figures.update(skew=skew, lease_left_min=round(min(leases), 2),
                   lease_left_max=round(max(leases), 2), samples=len(leases))  # fmt: skip
    assert (job.status, job.attempts, job.errors) == ("succeeded", 1, [])
    assert LedgerEntry.objects.count() == 1
    assert min(leases) > 0 and max(leases) <= 2.1, "leases run on the database clock"
    # Its per-minute counters are filed under the database's minute too.
    assert minutes and all(abs(m - db_now) < dt.timedelta(minutes=2) for m in minutes)


@pytest.mark.mysql
def test_a_stopped_worker_with_a_fast_clock_loses_its_lease_on_time(rel_env, tmp_path, figures):
    """Two hours ahead, then frozen: its 2 s lease still runs out 2 s later, by the database."""
    env = skewed_env(rel_env(HEARTBEAT_SECONDS=0.5))
    started = tmp_path / "started"
    result = tasks.record_then_hold.enqueue(started=str(started), seconds=30)
    worker = Supervisor(
        env, tmp_path / "runworkers.log",
        "--processes", "1", "--threads", "1", "--lease", "2", "--queues", "default",
        prefix=skewed("+2h"),
    )  # fmt: skip
    reaper = None
    try:
        wait_for(started.exists, STARTUP)
        [pid] = worker.workers()
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        reaper = subprocess.Popen(
            [*MANAGE, "skipqueue_reap", "--interval", "0.5"], env=rel_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(lambda: Job.objects.get(pk=result.id).status != "claimed", 30)
        reclaimed_after = time.monotonic() - stopped
    finally:
        for pid in worker.workers():
            kill_quietly(pid, signal.SIGKILL)
        if reaper is not None:
            reaper.send_signal(signal.SIGTERM)
            reaper.wait(30)
    job = Job.objects.get(pk=result.id)
    figures.update(reclaimed_after_s=round(reclaimed_after, 1))
    assert job.errors[0]["exception_class_path"].endswith("LeaseExpired")
    assert reclaimed_after < 2 + 0.5 + 3, "reclaimed a lease length after the freeze"
