"""The django.tasks contract: results, statuses, errors and return values as Django documents."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from django_skipqueue import transitions
from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import TaskResultDoesNotExist, TaskResultMismatch, TaskResultStatus
from django_skipqueue.models import Job
from tests.support.tasks import async_double, echo, explode, noop

pytestmark = pytest.mark.django_db(transaction=True)


def test_backend_declares_its_features(backend):
    assert isinstance(backend, SkipQueueBackend)
    assert backend.supports_defer
    assert backend.supports_priority
    assert backend.supports_get_result
    assert backend.supports_async_task


def test_get_result_and_refresh_follow_the_job_through_success():
    result = echo.enqueue(1, key="v")
    fetched = echo.get_result(result.id)
    assert (fetched.id, fetched.status, fetched.args, fetched.kwargs) == (
        result.id,
        TaskResultStatus.READY,
        [1],
        {"key": "v"},
    )
    with pytest.raises(ValueError, match="not finished"):
        _ = fetched.return_value

    [job] = Job.objects.claim(["default"], limit=1, owner="worker-1")
    result.refresh()
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == ["worker-1"] and result.attempts == 1
    assert result.started_at is not None and result.last_attempted_at is not None

    assert transitions.succeed(job, {"answer": 42})
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished
    assert result.return_value == {"answer": 42}
    assert result.finished_at >= result.started_at >= result.enqueued_at
    assert result.errors == []


def test_failed_result_carries_each_attempts_error():
    result = explode.using(max_attempts=2).enqueue("bad")
    for attempt, retry_in in ((1, 0.0), (2, None)):
        [job] = Job.objects.claim(["default"], limit=1, owner=f"w{attempt}")
        error = {"exception_class_path": "builtins.ValueError", "traceback": f"attempt {attempt}"}
        assert transitions.fail(job, error, retry_in=retry_in)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [e.traceback for e in result.errors] == ["attempt 1", "attempt 2"]
    assert result.errors[0].exception_class is ValueError
    assert result.worker_ids == ["w1", "w2"] and result.attempts == 2
    with pytest.raises(ValueError, match="failed"):
        _ = result.return_value


def test_unknown_and_malformed_ids_do_not_exist(backend):
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result("999999")
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result("not-a-number")


def test_get_result_of_another_task_is_a_mismatch():
    result = echo.enqueue()
    with pytest.raises(TaskResultMismatch):
        noop.get_result(result.id)


def test_result_task_keeps_the_enqueue_time_overrides():
    result = echo.using(priority=-3, queue_name="emails").enqueue()
    fetched = echo.get_result(result.id)
    assert (fetched.task.priority, fetched.task.queue_name) == (-3, "emails")
    assert fetched.task.func is echo.func


def test_async_enqueue_and_get_result():
    async def scenario():
        result = await async_double.aenqueue(21)
        fetched = await async_double.aget_result(result.id)
        await fetched.arefresh()
        # The queries ran on asgiref's thread: close its connection.
        await sync_to_async(connections.close_all)()
        return result, fetched

    result, fetched = asyncio.run(scenario())
    assert fetched.id == result.id and fetched.args == [21]
    assert Job.objects.get(pk=result.id).task_path == "tests.support.tasks.async_double"
