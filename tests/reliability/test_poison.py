"""Poison jobs end ``failed`` after their attempts, with an error that says why.

One kills its process, one hangs past its timeout (in a thread, and on the event loop), one
raises from a coroutine, one names a task that no longer exists (failed at its first attempt).
Good jobs queued with them still run, and the worker pool survives: the supervisor replaces
what died.
"""

from __future__ import annotations

import pytest
from django.db.models import Q

from django_skipqueue.models import Job
from testproject.demo.models import LedgerEntry
from tests.reliability import tasks
from tests.reliability.audit import audit, job_rows
from tests.reliability.procs import Supervisor

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

    supervisor = Supervisor(
        rel_env(RESTART_BACKOFF_MAX=1.0), tmp_path / "runworkers.log",
        "--processes", "2", "--threads", "2", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        code = supervisor.wait(timeout=120)
    finally:
        supervisor.stop()
    assert code == 0, supervisor.log()[-3000:]

    jobs = {name: Job.objects.get(pk=result.id) for name, result in poison.items()}
    figures.update({name: f"{job.status}: {error_names(job)}" for name, job in jobs.items()})
    # A task path that names no Task fails at once: it spends a second attempt only when a
    # crash of the process that held it came first (WorkerDied).
    gone_attempts = 1 + error_names(jobs["gone"]).count("WorkerDied")
    assert {name: (job.status, job.attempts) for name, job in jobs.items()} == {
        name: ("failed", gone_attempts if name == "gone" else 2) for name in poison
    }
    # Each attempt ended with the job's own error, or with WorkerDied when it shared its
    # process with the crashing job (a bystander's attempt is spent too: it may have been
    # the killer). The last error is always the job's own.
    for name, reason in REASONS.items():
        names = error_names(jobs[name])
        assert names[-1] == reason and set(names) <= {reason, "WorkerDied"}, (name, names)
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
    assert not Job.objects.filter(Q(status="claimed") | Q(status="ready")).exists()
