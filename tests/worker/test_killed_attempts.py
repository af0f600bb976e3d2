"""Acceptance: a task that kills its worker process spends the attempts of the jobs that had
started, and only theirs (issue 34, defect 10). The jobs its process merely held, claimed
ahead and waiting for a thread, go back with their attempt unspent."""

from __future__ import annotations

import json
import re

import pytest

from django_skipqueue.models import Job
from tests.support import killer_tasks as kt
from tests.support.workers import Runworkers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]


def classes(job):
    return [error["exception_class_path"].rsplit(".", 1)[-1] for error in job.errors]


def test_only_the_jobs_that_had_started_spend_an_attempt(backend, child_env, manage_py, tmp_path):
    # Two threads and four jobs claimed ahead: the first claim takes all six. The sleeper
    # and the killer start; the four innocent jobs wait for a thread when the killer fires
    # (SKIPQUEUE_PREFETCH_MAX_WAIT long enough that the worker keeps them until then).
    sleeper = kt.sleeper.enqueue(2.0)
    killer = kt.kill_own_process_after.enqueue(0.5)
    innocents = backend.enqueue_many([(kt.innocent, [f"i{n}"], {}) for n in range(4)])
    env = {
        **child_env,
        "DJANGO_SETTINGS_MODULE": "tests.reliability.settings",
        "RELIABILITY_SETTINGS": json.dumps({"SKIPQUEUE_PREFETCH_MAX_WAIT": 20.0}),
    }
    workers = Runworkers(
        manage_py, env, tmp_path / "killed.log",
        "--processes", "1", "--threads", "2", "--prefetch", "4", "--burst",
        "--queues", "default",
    )  # fmt: skip
    try:
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    log = workers.log()
    assert len(re.findall(r"worker exited .* reason=signal SIGKILL", log)) == 1, log[-3000:]

    job = Job.objects.get(pk=killer.id)
    assert (job.status, job.attempts, classes(job)) == ("failed", 1, ["WorkerDied"])
    job = Job.objects.get(pk=sleeper.id)  # it had started: its attempt is spent
    assert (job.status, job.attempts, classes(job)) == ("succeeded", 2, ["WorkerDied"])
    for result in innocents:  # held, never begun: back with their attempt, then run once
        job = Job.objects.get(pk=result.id)
        assert (job.status, job.attempts, job.errors) == ("succeeded", 1, []), job.errors
        assert len(job.worker_ids) == 1
    assert log.count("started=no") == 4
