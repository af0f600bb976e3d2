"""Acceptance: worker processes killed with SIGKILL, by the test or by their own task."""

from __future__ import annotations

import os
import re
import signal
from collections import defaultdict

import pytest

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.workers import (
    Runworkers,
    all_frozen,
    holder_pid,
    status_counts,
    wait_for,
    worker_pids,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]


def held_by_pid(pid: int) -> dict[int, str]:
    """Ids and owner of the jobs the worker process ``pid`` holds right now."""
    rows = Job.objects.claimed().values_list("pk", "owner")
    return {pk: owner for pk, owner in rows if owner.split(":")[-2] == str(pid)}


def test_kill_9_mid_load_loses_nothing_and_only_its_jobs_run_twice(
    backend, child_env, manage_py, tmp_path
):
    backend.enqueue_many([(wt.slow_record, [0.01], {})] * 1500)
    workers = Runworkers(
        manage_py, child_env, tmp_path / "kill.log",
        "--processes", "2", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        wait_for(lambda: Job.objects.filter(status="succeeded").count() >= 300, timeout=120)
        victim = wait_for(lambda: holder_pid(Job.objects.claimed().values("pk")[:1]), 30)
        # Freeze every process of the run, so what the victim holds is final when it is read.
        with all_frozen(sorted({workers.process.pid, victim, *worker_pids(alive_only=True)})):
            held = held_by_pid(victim)
            os.kill(victim, signal.SIGKILL)
        assert held, "the killed worker held no job"
        assert workers.wait(timeout=300) == 0, workers.log()[-3000:]
    finally:
        workers.stop()

    assert status_counts() == {"succeeded": 1500}
    [victim_owner] = set(held.values())
    executions: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for job_id, attempt, worker in LedgerEntry.objects.values_list("job_id", "attempt", "worker"):
        executions[job_id].append((attempt, worker))
    assert len(executions) == 1500  # every job ran
    repeated = {job_id for job_id, runs in executions.items() if len(runs) > 1}
    assert repeated <= set(held)  # the only duplicates: jobs the killed process held
    for job_id in repeated:
        runs = sorted(executions[job_id])
        assert runs[0][1] == victim_owner  # the killed process ran it first
        assert [attempt for attempt, _ in runs] == list(range(1, len(runs) + 1))
    for job in Job.objects.filter(pk__in=held):
        if job.attempts == 1:  # held but not begun (claimed ahead): back with its attempt
            assert job.errors == [] and victim_owner not in job.worker_ids
            assert all(worker != victim_owner for _, worker in executions[job.pk])
            continue
        assert job.attempts == 2 and job.worker_ids[0] == victim_owner
        assert job.errors[0]["exception_class_path"].endswith("WorkerDied")
    assert "reason=signal SIGKILL restart_in=" in workers.log()
    assert WorkerProcess.objects.filter(role="worker").count() == 3  # the dead one replaced


def test_max_jobs_replaces_worker_processes_at_once(backend, child_env, manage_py, tmp_path):
    backend.enqueue_many([(wt.slow_record, [0], {})] * 20)
    workers = Runworkers(
        manage_py, child_env, tmp_path / "recycle.log",
        "--processes", "1", "--threads", "2", "--burst", "--queues", "default", "--max-jobs", "5",
    )  # fmt: skip
    try:
        assert workers.wait(timeout=120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert status_counts() == {"succeeded": 20}
    assert LedgerEntry.objects.count() == 20
    rows = WorkerProcess.objects.filter(role="worker")
    assert rows.count() >= 4 and all(row.claimed <= 5 for row in rows)
    assert "reason=exit 75 restart_in=0.0" in workers.log()


def test_a_task_that_kills_its_process_fails_after_max_attempts(
    backend, child_env, manage_py, tmp_path
):
    poison = wt.kill_own_process.enqueue()
    others = backend.enqueue_many([(wt.slow_record, [0.01], {})] * 20)
    workers = Runworkers(
        manage_py, child_env, tmp_path / "poison.log",
        "--processes", "1", "--threads", "2", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        assert workers.wait(timeout=120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    job = Job.objects.get(pk=poison.id)
    assert (job.status, job.attempts, job.max_attempts) == ("failed", 2, 2)
    assert [e["exception_class_path"].rsplit(".", 1)[-1] for e in job.errors] == [
        "WorkerDied",
        "WorkerDied",
    ]
    assert Job.objects.filter(pk__in=[r.id for r in others], status="succeeded").count() == 20
    assert len(re.findall(r"worker exited .* reason=signal SIGKILL", workers.log())) == 2
