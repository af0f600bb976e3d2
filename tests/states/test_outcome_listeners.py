"""The outcome listeners (django_skipqueue.hooks): heard inside the outcome's transaction, only
when the fence let the write through, and a listener's failure takes the outcome with it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from django.db import connection

from django_skipqueue import hooks, transitions
from django_skipqueue.hooks import Ended
from django_skipqueue.models import Job
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)

#: A batch id no Batch row has: the workflows app's own listener counts it nowhere.
BATCH = 987_654


@pytest.fixture
def heard() -> Iterator[list[tuple[bool, list[Ended]]]]:
    """Register a listener that notes whether it ran in a transaction, and what it heard."""
    notes: list[tuple[bool, list[Ended]]] = []

    def listener(using: str, ended: Sequence[Ended]) -> None:
        notes.append((connection.in_atomic_block, list(ended)))

    hooks.register_outcome_listener(listener)
    hooks.register_outcome_listener(listener)  # idempotent: ready() may run twice
    try:
        yield notes
    finally:
        hooks.unregister_outcome_listener(listener)
    assert listener not in hooks.outcome_listeners()


def claimed_in_batch() -> Job:
    job = Job.objects.get(pk=noop.enqueue().id)
    Job.objects.filter(pk=job.pk).update(batch_id=BATCH)
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w1")
    return mine


def test_a_batched_success_is_heard_once_inside_its_transaction(heard):
    job = claimed_in_batch()
    assert transitions.succeed(job, {"ok": 1})
    assert heard == [(True, [Ended(BATCH, "succeeded", job.pk, {"ok": 1})])]


def test_a_write_the_fence_rejects_is_heard_by_nobody(heard):
    job = claimed_in_batch()
    Job.objects.filter(pk=job.pk).update(owner="w2")  # taken over
    assert not transitions.succeed(job, None)
    assert not transitions.succeed_many([job], [None])[0]
    assert heard == []


def test_a_plain_job_is_not_announced(heard):
    job = Job.objects.get(pk=noop.enqueue().id)
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w1")
    assert transitions.succeed_many([mine], [None]) == [True]
    assert heard == []


def test_a_failing_listener_rolls_the_outcome_back():
    def refuse(using: str, ended: Sequence[Ended]) -> None:
        raise RuntimeError("no")

    job = claimed_in_batch()
    hooks.register_outcome_listener(refuse)
    try:
        with pytest.raises(RuntimeError):
            transitions.succeed_many([job], [None])
    finally:
        hooks.unregister_outcome_listener(refuse)
    assert Job.objects.get(pk=job.pk).status == "claimed"
