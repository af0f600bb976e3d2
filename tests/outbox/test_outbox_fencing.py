"""Partition leases: SKIP LOCKED between relays, and fences that make a stalled relay harmless."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections, transaction

from django_skipqueue.outbox import partitions, publish_many
from django_skipqueue.outbox.models import OutboxMessage, OutboxPartition
from django_skipqueue.outbox.settle import Outcomes, mark_claimed, settle
from django_skipqueue.outbox.writing import Message, partition_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def backlog() -> tuple[int, list[int]]:
    rows = publish_many([Message("orders", {"n": n}, key="k") for n in range(3)])
    partitions.ensure_partitions("default", 16)
    return partition_of("k", 16), [row.pk for row in rows]


def settle_sent(token: str, ids: list[int]) -> int:
    return settle("default", token, Outcomes(sent=ids), backoff=1, cap=1, max_attempts=3)[0]


def test_a_relay_past_its_lease_stamps_nothing_and_its_confirm_deletes_nothing(backlog):
    number, ids = backlog
    assert partitions.claim("default", "A", [number], limit=1, lease=0.2) == [number]
    assert mark_claimed("default", ids, "A#1", "A", number) == 3
    time.sleep(0.5)  # A stalls past its lease
    assert partitions.claim("default", "B", [number], limit=1, lease=30) == [number]
    assert mark_claimed("default", ids, "A#2", "A", number) == 0
    assert mark_claimed("default", ids, "B#1", "B", number) == 3

    assert settle_sent("A#1", ids) == 0, "B's stamp fences A's late confirm"
    partitions.release("default", "A", [number])
    assert OutboxPartition.objects.get(number=number).owner == "B"
    assert partitions.claim("default", "C", [number], limit=1, lease=30) == []
    assert settle_sent("B#1", ids) == 3
    assert not OutboxMessage.objects.exists()


@pytest.mark.skip_locked
def test_a_partition_locked_by_another_claim_is_skipped_not_waited_for(
    backlog, close_thread_connections
):
    number, _ = backlog
    other = (number + 1) % 16
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with transaction.atomic():
            list(OutboxPartition.objects.select_for_update().filter(number=number))
            locked.set()
            release.wait(10)
        connections.close_all()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        assert partitions.claim("default", "B", [number, other], limit=2, lease=30) == [other]
        assert time.monotonic() - started < 5.0  # a lock wait would last innodb_lock_wait_timeout
    finally:
        release.set()
        holder.join()
