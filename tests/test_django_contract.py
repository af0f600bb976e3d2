"""Django's documented Tasks contract, where the conformance run found ours departing from it."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.tasks.exceptions import InvalidTask

from django_skipqueue.exceptions import InvalidPayload
from django_skipqueue.models import Job
from tests.tasks import echo
from tests.workers import Runworkers

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_non_json_argument_raises_a_type_error_that_is_an_invalid_task(backend):
    """topics/tasks, "Enqueueing Tasks": a non-JSON argument raises TypeError."""
    for enqueue in (
        lambda: echo.enqueue(datetime.now()),
        lambda: backend.enqueue_many([(echo, [], {"when": datetime.now()})]),
    ):
        with pytest.raises(TypeError, match="Unsupported type") as raised:
            enqueue()
        assert isinstance(raised.value, InvalidTask | InvalidPayload)
    assert not Job.objects.exists()


def test_aenqueue_of_a_non_json_argument_raises_a_type_error():
    async def scenario():
        try:
            await echo.aenqueue({"at": datetime.now()})
        finally:
            await sync_to_async(connections.close_all)()

    with pytest.raises(TypeError, match="Unsupported type"):
        asyncio.run(scenario())


@pytest.fixture
def any_queue(settings, child_env):
    """QUEUES = [] here and in the worker processes this test starts."""
    settings.TASKS = {"default": {**settings.TASKS["default"], "QUEUES": []}}
    return {**child_env, "DJANGO_SETTINGS_MODULE": "tests.settings_any_queue"}


def test_with_queues_empty_runworkers_serves_every_queue(any_queue, manage_py, tmp_path):
    """Django: a queue name "must match a queue defined in QUEUES, unless QUEUES is set to []"."""
    results = [echo.using(queue_name=name).enqueue(name) for name in ("zeta", "alpha", "default")]
    workers = Runworkers(manage_py, any_queue, tmp_path / "all.log", "--burst", "--threads", "1")
    try:
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert all(job.status == "succeeded" for job in Job.objects.all()), workers.log()[-3000:]
    assert len(results) == Job.objects.count() == 3
    assert "queues=*" in workers.log() and "died" not in workers.log()


def test_with_queues_empty_runworkers_serves_the_queues_named(any_queue, manage_py, tmp_path):
    mine, other = echo.using(queue_name="mine").enqueue(), echo.using(queue_name="other").enqueue()
    workers = Runworkers(manage_py, any_queue, tmp_path / "m.log", "--burst", "--queues", "mine")
    try:
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert (statuses[int(mine.id)], statuses[int(other.id)]) == ("succeeded", "ready")

    refused = Runworkers(manage_py, any_queue, tmp_path / "bad.log", "--queues", "no good")
    try:
        assert refused.wait(timeout=60) != 0
    finally:
        refused.stop()
    assert "Unknown queue(s) no good" in refused.log()
