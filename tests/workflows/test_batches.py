"""Batches counted by the job transitions: callbacks enqueued once, when due, with the batch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_skipqueue import transitions
from django_skipqueue.exceptions import BatchFinished
from django_skipqueue.maintenance.reap import reap
from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus
from django_skipqueue.workflows import batch, batch_result, extend
from django_skipqueue.workflows.models import Batch, Member
from tests.support.admin import run_action
from tests.support.tasks import noop
from tests.worker.test_worker_inprocess import no_burst_horizon, run_worker  # noqa: F401
from tests.workflows.tasks import broken, callback, part

pytestmark = pytest.mark.django_db(transaction=True)
CALLBACK = "tests.workflows.tasks.callback"


def callback_jobs() -> list[Job]:
    return list(Job.objects.filter(task_path=CALLBACK).order_by("pk"))


def test_callbacks_wait_for_the_last_job_then_are_enqueued_once(close_thread_connections):
    with batch(on_success=callback, on_finish=CALLBACK, callback_kwargs={"label": "x"}) as b:
        results = [part.enqueue(n) for n in range(3)]
    row = Batch.objects.get(pk=b.id)
    assert (row.size, row.ended, row.finished_at) == (3, 0, None)
    assert sorted(Member.objects.values_list("job_id", flat=True)) == sorted(
        int(r.id) for r in results
    )
    assert set(Job.objects.filter(task_path__endswith="part").values_list("batch_id", flat=True))\
        == {b.id}  # fmt: skip
    run_worker()
    row.refresh_from_db()
    assert (row.size, row.succeeded, row.failed) == (3, 3, 0) and row.finished_at
    success, finish = callback_jobs()
    assert (row.success_job_id, row.finish_job_id) == (success.pk, finish.pk)
    assert success.args == [b.id] and success.kwargs == {"label": "x"}
    assert success.batch_id is None
    assert success.status == finish.status == JobStatus.SUCCEEDED
    last_ended = max(job.finished_at for job in Job.objects.filter(batch_id=b.id))
    assert success.enqueued_at >= last_ended and finish.enqueued_at >= last_ended


def test_a_failure_fires_on_failure_at_once_and_on_finish_at_the_end(close_thread_connections):
    with batch(on_success=CALLBACK, on_finish=CALLBACK, on_failure=CALLBACK) as b:
        bad = broken.enqueue(1)
        part.enqueue(2, flaky=True)
    run_worker(threads=1)
    row = Batch.objects.get(pk=b.id)
    assert (row.succeeded, row.failed, row.success_job_id) == (1, 1, None)
    assert row.failure_job_id and row.finish_job_id and row.failure_job_id != row.finish_job_id
    assert len(callback_jobs()) == 2
    seen = batch_result(b.id, return_values=True)
    assert [f.job_id for f in seen.failures] == [int(bad.id)]
    assert seen.failures[0].error["exception_class_path"] == "builtins.ValueError"
    assert list(seen.return_values.values()) == [4]


def test_an_empty_batch_is_done_when_it_closes():
    with batch(on_finish=CALLBACK) as b:
        pass
    row = Batch.objects.get(pk=b.id)
    assert row.finished_at and row.finish_job_id == callback_jobs()[0].pk


def test_nothing_is_counted_when_the_block_rolls_back():
    with pytest.raises(RuntimeError), batch(on_finish=CALLBACK):
        part.enqueue(1)
        raise RuntimeError
    assert not Batch.objects.exists() and not Job.objects.exists()


def test_a_nested_batch_is_one_member_that_ends_when_it_finishes(close_thread_connections):
    with batch(on_finish=CALLBACK) as outer:
        part.enqueue(1)
        with batch(on_success=CALLBACK) as inner:
            part.enqueue(2)
            part.enqueue(3)
    assert Batch.objects.get(pk=inner.id).parent_id == outer.id
    assert (outer.size, Batch.objects.get(pk=outer.id).size) == (2, 2)
    run_worker()
    rows = {row.pk: row for row in Batch.objects.all()}
    assert (rows[outer.id].succeeded, rows[inner.id].succeeded) == (2, 2)
    assert rows[outer.id].finished_at >= rows[inner.id].finished_at
    assert len(callback_jobs()) == 2
    assert batch_result(outer.id).batch_ids == [inner.id]


def test_a_batch_is_extended_while_open_and_refused_once_finished(close_thread_connections):
    with batch(on_finish=CALLBACK) as b:
        part.enqueue(1)
    with extend(b.id):
        part.enqueue(2)
    assert Batch.objects.get(pk=b.id).size == 2
    run_worker()
    row = Batch.objects.get(pk=b.id)
    assert (row.succeeded, row.finished_at is not None) == (2, True)
    with pytest.raises(BatchFinished), extend(b.id):
        part.enqueue(3)
    assert Job.objects.filter(batch_id=b.id).count() == 2


def test_an_extension_that_commits_after_the_batch_finished_rolls_back(close_thread_connections):
    with batch(on_finish=CALLBACK) as b:
        part.enqueue(1)
    with pytest.raises(BatchFinished), extend(b.id):
        part.enqueue(2)
        Batch.objects.filter(pk=b.id).update(succeeded=1, finished_at=timezone.now())
    assert Job.objects.filter(batch_id=b.id).count() == 1


def test_a_retried_failure_is_no_longer_counted_failed(close_thread_connections):
    with batch(on_finish=CALLBACK) as b:
        broken.enqueue(1)
    run_worker()
    job = Job.objects.get(task_path__endswith="broken")
    with transaction.atomic():
        assert transitions.retry_failed(Job.objects.filter(pk=job.pk), [job]) == 1
    row = Batch.objects.get(pk=b.id)
    assert (row.failed, row.finished_at is not None) == (0, True)


def test_a_job_outside_any_batch_costs_no_extra_query(close_thread_connections):
    noop.enqueue()
    owner = "test:owner"
    (job,) = Job.objects.claim(["default"], limit=1, owner=owner)
    with CaptureQueriesContext(connection) as queries:
        assert transitions.succeed(job, None)
    assert len(queries) == 1


def test_a_lost_fence_counts_nothing(close_thread_connections):
    with batch(on_finish=CALLBACK) as b:
        part.enqueue(1)
    (job,) = Job.objects.claim(["default"], limit=1, owner="test:a")
    stale = Job.objects.get(pk=job.pk)
    stale.attempts -= 1  # an older attempt's token: the fence rejects it
    assert not transitions.succeed(stale, 1)
    assert Batch.objects.get(pk=b.id).succeeded == 0
    assert transitions.succeed(job, 2)
    assert transitions.succeed(job, 2) is False
    row = Batch.objects.get(pk=b.id)
    assert (row.succeeded, len(callback_jobs())) == (1, 1)


def test_the_reaper_counts_a_job_whose_last_lease_expired(close_thread_connections):
    with batch(on_failure=CALLBACK, on_finish=CALLBACK) as b:
        broken.enqueue(1)  # max_attempts=1: a lost lease ends it for good
    (job,) = Job.objects.claim(["default"], limit=1, owner="test:dead")
    Job.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(minutes=1))
    assert reap().failed == 1
    row = Batch.objects.get(pk=b.id)
    assert (row.failed, row.finished_at is not None) == (1, True)
    assert row.failure_job_id and row.finish_job_id
    assert not transitions.succeed(job, None), "the dead owner's late success is refused"
    assert Batch.objects.get(pk=b.id).succeeded == 0


def test_an_admin_cancel_of_a_waiting_job_counts_it_cancelled(admin_client):
    with batch(on_success=CALLBACK, on_finish=CALLBACK) as b:
        waiting = part.enqueue(1)
    response = run_action(admin_client, "cancel_waiting", [Job.objects.get(pk=waiting.id)])
    assert response.status_code == 200
    row = Batch.objects.get(pk=b.id)
    assert (row.cancelled, row.success_job_id, row.finished_at is not None) == (1, None, True)
    assert row.finish_job_id == callback_jobs()[0].pk
