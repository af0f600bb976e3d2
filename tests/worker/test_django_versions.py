"""The same task, with this backend's options, on whichever supported Django runs the suite.

scripts/test.sh runs it on Django 6.1 and scripts/matrix.sh on 5.2 (through the django-tasks
backport) and 6.0: each run proves that ``django_skipqueue.tasks.task`` carries the options on
that version, that a real ``runworkers`` process runs the job, retries its failed first attempt,
and that ``get_result()`` reports the outcome as Django's Tasks API defines it.
"""

from __future__ import annotations

import django
import pytest

from django_skipqueue.compat import BUILTIN, TASKS_MODULE, TaskResultStatus
from django_skipqueue.models import Job
from django_skipqueue.tasks import SkipQueueTask
from tests.support.version_tasks import add_on_second_attempt
from tests.support.workers import Runworkers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]


def test_the_tasks_api_comes_from_where_this_django_has_it():
    assert (django.VERSION >= (6, 0)) == BUILTIN
    assert ("django.tasks" if BUILTIN else "django_tasks") == TASKS_MODULE
    assert type(add_on_second_attempt).__module__ == "django_skipqueue.tasks"
    assert isinstance(add_on_second_attempt, SkipQueueTask)


def test_a_task_with_options_enqueues_runs_retries_and_reports(manage_py, child_env, tmp_path):
    task = add_on_second_attempt
    assert (task.max_attempts, task.retry_backoff, task.timeout, task.lease) == (3, 0, 60, 30)
    assert task.priority == 5

    result = task.using(idempotency_key=f"versions-{django.get_version()}").enqueue(2, b=3)
    job = Job.objects.get(pk=int(result.id))
    assert (job.max_attempts, job.lease_seconds, job.priority) == (3, 30, 5)
    assert result.status == TaskResultStatus.READY

    workers = Runworkers(
        manage_py, child_env, tmp_path / "workers.log", "--burst", "--threads", "1"
    )
    try:
        assert workers.wait(timeout=120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()

    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert result.return_value == {"sum": 5, "attempt": 2}
    assert result.attempts == 2
    [error] = result.errors
    assert error.exception_class is RuntimeError
    assert "attempt 1 fails on purpose" in error.traceback
    fetched = task.get_result(result.id)
    assert fetched.status == TaskResultStatus.SUCCESSFUL
    assert fetched.return_value == {"sum": 5, "attempt": 2}
