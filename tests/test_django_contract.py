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
