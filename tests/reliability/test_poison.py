"""Poison jobs end ``failed`` after their attempts, with an error that says why.

One kills its process, one hangs past its timeout (in a thread, and on the event loop), one
raises from a coroutine, one names a task that no longer exists (failed at its first attempt).
Good jobs queued with them still run, and the worker pool survives: the supervisor replaces
what died.

The jobs a killed process had started lose their attempt with it (``WorkerDied``: the
supervisor cannot tell which of them killed it); jobs it only held, claimed ahead and not
begun, go back unspent (tests/worker/test_killed_attempts.py). The first test runs one job per
process at a time, so that each poison job fails by its own fault every run; the second runs
a job beside the crashing one on purpose.
"""

from __future__ import annotations

import pytest
from django.db.models import Q

from django_skipqueue.models import Job
from testproject.demo.models import LedgerEntry
from tests.reliability import tasks
from tests.reliability.audit import audit, job_rows
from tests.reliability.procs import Supervisor, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.slow]

GONE = "tests.reliability.tasks.renamed_long_ago"
REASONS = {
    "crash": "WorkerDied",
    "hang": "JobTimedOut",
    "async_hang": "JobTimedOut",
    "async_explode": "ValueError",
    "gone": "TaskNotFound",
}


def error_names(job: Job) -> list[str]:
    return [error["exception_class_path"].rpartition(".")[2] for error in job.errors]


def test_poison_jobs_fail_after_their_attempts_and_good_jobs_run(
    backend, rel_env, tmp_path, figures
):
    poison = {
        "crash": tasks.crash.enqueue(),
        "hang": tasks.hang.enqueue(),
        "async_hang": tasks.async_hang.enqueue(),
        "async_explode": tasks.async_explode.enqueue(),
        "gone": tasks.record.using(max_attempts=2).enqueue(),
    }
    Job.objects.filter(pk=poison["gone"].id).update(task_path=GONE)
    good = backend.enqueue_many([(tasks.record, [], {"label": "good"})] * 50)

    # One thread and no claiming ahead: a process holds one job at a time, so no job is ever a
    # bystander of the crash (the second test is about those). With two threads the jobs,
    # enqueued side by side, were claimed together, and the hang job lost both attempts to
    # the crash of the process it shared (WorkerDied twice, never timed out).
    supervisor = Supervisor(
        rel_env(RESTART_BACKOFF_MAX=1.0), tmp_path / "runworkers.log",
        "--processes", "2", "--threads", "1", "--prefetch", "0", "--burst",
        "--queues", "default",
    )  # fmt: skip
    try:
        code = supervisor.wait(timeout=120)
    finally:
        supervisor.stop()
    assert code == 0, supervisor.log()[-3000:]

    jobs = {name: Job.objects.get(pk=result.id) for name, result in poison.items()}
    figures.update({name: f"{job.status}: {error_names(job)}" for name, job in jobs.items()})
    # A task path that names no Task fails at its first attempt; the others after both.
    assert {name: (job.status, job.attempts) for name, job in jobs.items()} == {
        name: ("failed", 1 if name == "gone" else 2) for name in poison
    }
    # Every attempt ended with the job's own error.
    assert {name: error_names(job) for name, job in jobs.items()} == {
        name: [reason] * (1 if name == "gone" else 2) for name, reason in REASONS.items()
    }
    assert "an async task failed" in jobs["async_explode"].errors[-1]["traceback"]
    assert GONE in jobs["gone"].errors[-1]["traceback"]
    assert "died" in jobs["crash"].errors[-1]["traceback"]

    good_ids = [int(result.id) for result in good]
    rows = Job.objects.filter(pk__in=good_ids)
    report = audit(
        job_rows(rows.values_list("id", "status", "attempts", "worker_ids", "errors")),
        LedgerEntry.objects.filter(label="good").values_list("job_id", "attempt", "worker"),
        expected_ids=good_ids,
    )
    figures.update(good=report.as_dict())
    assert report.problems == [] and report.succeeded == 50
    assert not rows.exclude(attempts=1).exists(), "no good job shared a process with a poison"
    assert not Job.objects.filter(Q(status="claimed") | Q(status="ready")).exists()


def test_a_crash_spends_the_attempts_of_the_jobs_its_process_held(rel_env, tmp_path, figures):
    """A job that had started beside the crashing one loses its attempt each time the process
    dies (it may have done part of its work); one that had not started keeps it
    (tests/worker/test_killed_attempts.py).

    One process with two threads claims both jobs at once (nothing else is ready), twice; the
    crash waits until the bystander has begun its attempt: the crash job fails after its two
    attempts, both ``WorkerDied``, and the bystander, which waits for a file meanwhile, has
    spent two of its three attempts the same way. Its third attempt runs once the file exists,
    and writes the only ledger row.
    """
    proceed, started = tmp_path / "proceed", tmp_path / "started"
    crash = tasks.crash_after.enqueue(started=str(started))
    bystander = tasks.mark_then_wait.using(max_attempts=3).enqueue(
        started=str(started), proceed=str(proceed), label="bystander"
    )
    supervisor = Supervisor(
        rel_env(RESTART_BACKOFF_MAX=1.0), tmp_path / "runworkers.log",
        "--processes", "1", "--threads", "2", "--prefetch", "0", "--burst",
        "--queues", "default",
    )  # fmt: skip
    try:
        wait_for(lambda: Job.objects.get(pk=crash.id).status == "failed", 120)
        proceed.touch()
        code = supervisor.wait(timeout=120)
    finally:
        supervisor.stop()
    assert code == 0, supervisor.log()[-3000:]

    crashed, held = Job.objects.get(pk=crash.id), Job.objects.get(pk=bystander.id)
    figures.update(
        crash=f"{crashed.status}: {error_names(crashed)}",
        bystander=f"{held.status}: {error_names(held)}",
    )
    assert (crashed.status, crashed.attempts) == ("failed", 2)
    assert error_names(crashed) == ["WorkerDied", "WorkerDied"]
    assert (held.status, held.attempts) == ("succeeded", 3)
    assert error_names(held) == ["WorkerDied", "WorkerDied"]
    ledger = LedgerEntry.objects.filter(label="bystander").values_list("job_id", "attempt")
    assert list(ledger) == [(int(bystander.id), 3)]
