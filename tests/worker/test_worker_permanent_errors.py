"""Errors a retry cannot fix end the job at once: a return value that is not JSON, a task path
that names no Task. Run by a real ``runworkers --burst`` on the test database."""

from __future__ import annotations

import pytest

from django_skipqueue.models import Job
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.workers import Runworkers

pytestmark = pytest.mark.django_db(transaction=True)


def drain(manage_py, child_env, tmp_path) -> str:
    workers = Runworkers(manage_py, child_env, tmp_path / "workers.log", "--burst")
    try:
        assert workers.wait(timeout=120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    return workers.log()


def test_a_return_value_that_is_not_json_fails_at_once(manage_py, child_env, tmp_path):
    result = wt.write_then_return_a_set.enqueue()
    drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.max_attempts) == ("failed", 1, 3)
    assert LedgerEntry.objects.filter(job_id=job.pk).count() == 1, "side effects ran once"
    [error] = job.errors
    assert error["exception_class_path"] == "django_skipqueue.exceptions.InvalidReturnValue"
    assert "The task returned a set, which cannot be stored as JSON" in error["traceback"]


def test_a_task_path_that_names_no_task_fails_at_once(manage_py, child_env, tmp_path):
    result, aliased = wt.slow_record.enqueue(), wt.slow_record.enqueue()
    Job.objects.filter(pk=result.id).update(task_path="tests.support.worker_tasks.renamed_record")
    Job.objects.filter(pk=aliased.id).update(
        task_path="tests.support.worker_tasks.slow_record_old_name"
    )
    log = drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.max_attempts) == ("failed", 1, 5)
    [error] = job.errors
    assert error["exception_class_path"] == "django_skipqueue.exceptions.TaskNotFound"
    assert "'tests.support.worker_tasks.renamed_record' names nothing" in error["traceback"]
    assert "keep the old name as an alias" in error["traceback"]
    assert f"job={job.pk} task=tests.support.worker_tasks.renamed_record" in log
    assert Job.objects.get(pk=aliased.id).status == "succeeded", "the old name as an alias"
    assert list(LedgerEntry.objects.values_list("job_id", flat=True)) == [int(aliased.id)]
