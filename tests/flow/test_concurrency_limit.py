"""Acceptance: a per-key concurrency limit holds across worker processes, and after kill -9."""

from __future__ import annotations

import os
import random
import signal

import pytest

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import FlowKey, Job
from tests.flow.ledger import intervals, most_at_once
from tests.support import flow_tasks as ft
from tests.support.workers import Runworkers, all_frozen, holder_pid, wait_for, worker_pids

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]

KEYS = 10
JOBS = 500
#: Deadlines, not measures: four processes starting on a loaded 2-core machine take a minute.
STARTUP = 240


def enqueue_limited() -> None:
    rng = random.Random(18)
    calls = [(ft.limited, [f"c{n % KEYS}", n, rng.uniform(0.02, 0.2)], {}) for n in range(JOBS)]
    ft.limited.get_backend().enqueue_many(calls)


def assert_limit_held(kills=()) -> None:
    per_key = intervals(kills)
    assert sorted(per_key) == sorted(f"c{n}" for n in range(KEYS))
    for key, runs in per_key.items():
        assert most_at_once(runs) <= 2, key
    # The limit was reached: the keys ran two at a time, not one.
    assert max(most_at_once(runs) for runs in per_key.values()) == 2


def assert_nothing_left() -> None:
    assert set(Job.objects.values_list("status", flat=True)) == {"succeeded"}
    assert Job.objects.count() == JOBS
    assert not Job.objects.filter(flow_slot=True).exists()
    assert list(FlowKey.objects.values_list("running", flat=True)) == [0] * KEYS


def test_no_key_runs_more_than_its_limit(child_env, manage_py, tmp_path):
    enqueue_limited()
    assert Job.objects.filter(status="ready").count() == 2 * KEYS
    assert Job.objects.filter(status="blocked").count() == JOBS - 2 * KEYS
    workers = Runworkers(
        manage_py, child_env, tmp_path / "limit.log",
        "--processes", "4", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        assert workers.wait(timeout=STARTUP + 120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert_limit_held()
    assert_nothing_left()


def test_kill_9_returns_the_slots_and_loses_nothing(child_env, manage_py, tmp_path):
    enqueue_limited()
    workers = Runworkers(
        manage_py, child_env, tmp_path / "kill.log",
        "--processes", "4", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    kills = []
    try:
        for round_ in range(2):
            wait_for(
                lambda r=round_: Job.objects.filter(status="succeeded").count() >= 100 * (r + 1),
                timeout=STARTUP,
            )
            victim = wait_for(lambda: holder_pid(Job.objects.claimed().values("pk")[:1]), 30)
            with all_frozen(sorted({workers.process.pid, victim, *worker_pids(alive_only=True)})):
                os.kill(victim, signal.SIGKILL)
                kills.append(read_db_now("default"))
        assert workers.wait(timeout=STARTUP + 120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert workers.log().count("reason=signal SIGKILL restart_in=") == 2
    # An execution the kill cut short has no end: it counts as running until the kill.
    assert_limit_held(kills)
    assert_nothing_left()
    retried = Job.objects.filter(attempts__gt=1)
    assert retried.exists()  # the killed workers' jobs ran again, their slots kept
    assert all(job.errors[0]["exception_class_path"].endswith("WorkerDied") for job in retried)
