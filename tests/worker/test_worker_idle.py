"""Acceptance: idle workers poll at most about once a second; a wake-up reaches them at once."""

from __future__ import annotations

import signal
import time

import pytest
from django.db import transaction

from django_skipqueue import wakeup
from django_skipqueue.models import Job, QueueMinute, WorkerProcess
from django_skipqueue.wakeup import Waker
from tests.support import worker_tasks as wt
from tests.support.workers import Runworkers, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_addresses():
    wakeup.forget_addresses()
    yield
    wakeup.forget_addresses()


def test_idle_worker_processes_make_about_one_claim_query_per_second(
    child_env, manage_py, tmp_path
):
    workers = Runworkers(
        manage_py, child_env, tmp_path / "idle.log",
        "--processes", "2", "--queues", "default", "--no-wakeup",
    )  # fmt: skip
    try:
        wait_for(lambda: WorkerProcess.objects.filter(role="worker").count() == 2, 60)
        time.sleep(10)
        workers.signal(signal.SIGTERM)
        assert workers.wait(timeout=30) == 0
    finally:
        workers.stop()
    for row in WorkerProcess.objects.filter(role="worker"):
        idle_seconds = (row.stopped_at - row.started_at).total_seconds()
        queries = sum(
            QueueMinute.objects.filter(owner=row.owner).values_list("claim_queries", flat=True)
        )
        # Doubling pauses from 10 ms reach the 1 s cap after 7 queries (1.3 s); then 1 a second.
        assert idle_seconds > 9
        assert idle_seconds * 0.5 < queries <= idle_seconds + 8, (queries, idle_seconds)


def test_a_datagram_wakes_a_waiting_waker_with_the_queue_names():
    waker = Waker("127.0.0.1")
    try:
        WorkerProcess.objects.create(
            owner="host:1:abc", role="worker", hostname="host", pid=1, queues=["emails"],
            wakeup_address=waker.address, started_at=_now(), last_heartbeat_at=_now(),
        )  # fmt: skip
        assert wakeup.notify("default", frozenset({"default"})) == 0  # not its queue
        assert wakeup.notify("default", frozenset({"emails", "default"})) == 1
        began = time.monotonic()
        assert waker.wait(30, listen=True) == {"default", "emails"}
        assert time.monotonic() - began < 10  # woken, not timed out
        assert waker.wait(0.05, listen=True) == set()  # nothing left over
    finally:
        waker.close()


def test_enqueue_wakes_workers_only_once_its_transaction_commits():
    waker = Waker("127.0.0.1")
    try:
        WorkerProcess.objects.create(
            owner="host:1:abc", role="worker", hostname="host", pid=1, queues=["default"],
            wakeup_address=waker.address, started_at=_now(), last_heartbeat_at=_now(),
        )  # fmt: skip
        with pytest.raises(RuntimeError), transaction.atomic():
            wt.stamp.enqueue()
            raise RuntimeError("roll back")
        assert waker.wait(0.3, listen=True) == set()
        with transaction.atomic():
            wt.stamp.enqueue()
            assert waker.wait(0.3, listen=True) == set()  # not before the commit
        assert waker.wait(2, listen=True) == {"default"}
    finally:
        waker.close()


def test_an_idle_worker_starts_a_new_job_right_after_the_commit(child_env, manage_py, tmp_path):
    # Polling alone would take seconds here: pauses double from 10 ms up to --poll-max 30,
    # so between 5.1 s and 10.2 s after start the worker makes no claim query at all.
    workers = Runworkers(
        manage_py, child_env, tmp_path / "wake.log",
        "--processes", "1", "--queues", "default", "--poll-max", "30",
    )  # fmt: skip
    try:
        row = wait_for(lambda: WorkerProcess.objects.filter(role="worker").first(), 60)
        assert row.wakeup_address
        time.sleep(max(0.0, 6.0 - (time.time() - row.started_at.timestamp())))
        result = wt.stamp.enqueue()
        committed = time.time()
        wait_for(lambda: Job.objects.filter(pk=result.id, status="succeeded").exists(), 3)
        started = Job.objects.get(pk=result.id).return_value
        assert started - committed < 1.0
        workers.signal(signal.SIGTERM)
        assert workers.wait(timeout=30) == 0
    finally:
        workers.stop()


def _now():
    from django_skipqueue.db.clock import read_db_now

    return read_db_now("default")
