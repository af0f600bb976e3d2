"""Chains: each step enqueued by its predecessor's committed success, with its return value."""

from __future__ import annotations

import pytest

from django_skipqueue import transitions
from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus
from django_skipqueue.workflows import chain, step
from django_skipqueue.workflows.models import Batch
from tests.worker.test_worker_inprocess import no_burst_horizon, run_worker  # noqa: F401
from tests.workflows.tasks import add, add_or_fail

pytestmark = pytest.mark.django_db(transaction=True)
CALLBACK = "tests.workflows.tasks.callback"


def steps_of(chain_id: int) -> list[Job]:
    return list(Job.objects.filter(batch_id=chain_id).order_by("pk"))


def test_each_step_gets_the_previous_value_first(close_thread_connections):
    row = chain(step(add, 1, 10), step(add, 100), step(add, 1000), on_success=CALLBACK)
    assert [job.args for job in steps_of(row.pk)] == [[1, 10]]
    run_worker()
    jobs = steps_of(row.pk)
    assert [job.args for job in jobs] == [[1, 10], [11, 100], [111, 1000]]
    assert [job.return_value for job in jobs] == [11, 111, 1111]
    row.refresh_from_db()
    assert (row.succeeded, row.steps, row.finished_at is not None) == (3, [], True)
    assert Job.objects.get(pk=row.success_job_id).status == JobStatus.SUCCEEDED


def test_the_next_step_exists_only_once_its_predecessor_committed(close_thread_connections):
    row = chain(step(add, 1, 1), step(add, 1))
    (first,) = Job.objects.claim(["default"], limit=1, owner="test:a")
    assert len(steps_of(row.pk)) == 1, "the second step is enqueued before the first ended"
    stale = Job.objects.get(pk=first.pk)
    stale.owner = "test:b"  # another owner's completion: the fence refuses it
    assert not transitions.succeed(stale, 2)
    assert len(steps_of(row.pk)) == 1
    assert transitions.succeed(first, 2)
    assert [job.args for job in steps_of(row.pk)] == [[1, 1], [2, 1]]


def test_a_failed_step_stops_the_chain_and_a_retry_resumes_it(close_thread_connections):
    row = chain(step(add_or_fail, 0, 9), step(add_or_fail, 2), step(add_or_fail, 2),
                step(add_or_fail, 9), on_failure=CALLBACK, on_finish=CALLBACK)  # fmt: skip
    run_worker()
    jobs = steps_of(row.pk)
    assert [job.status for job in jobs] == [JobStatus.SUCCEEDED] * 2 + [JobStatus.FAILED]
    row.refresh_from_db()
    assert (row.failed, row.finished_at is not None, len(row.steps)) == (1, True, 1)
    assert row.failure_job_id and row.finish_job_id
    # Resume: the cause fixed (here: the step's limit), retry the failed step.
    Job.objects.filter(pk=jobs[2].pk).update(args=[2, 5])
    failed = Job.objects.get(pk=jobs[2].pk)
    assert transitions.retry_failed(Job.objects.filter(pk=failed.pk), [failed]) == 1
    run_worker()
    jobs = steps_of(row.pk)
    assert [job.return_value for job in jobs] == [1, 2, 3, 4]
    row.refresh_from_db()
    assert (row.succeeded, row.failed, row.steps) == (4, 0, [])
    assert Job.objects.filter(task_path=CALLBACK).count() == 2, "callbacks fire once"


def test_a_step_whose_task_is_gone_stops_the_chain_with_the_reason(close_thread_connections):
    row = chain(step(add, 1, 1), step(add, 1))
    Batch.objects.filter(pk=row.pk).update(
        steps=[{"task_path": "tests.workflows.tasks.gone", "args": [], "kwargs": {}}]
    )
    run_worker()
    row.refresh_from_db()
    assert (row.succeeded, row.failed, row.finished_at is not None) == (1, 1, True)
    assert "tests.workflows.tasks.gone" in row.callback_error
