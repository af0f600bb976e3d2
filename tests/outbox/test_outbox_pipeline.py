"""A relay claims its next round while RabbitMQ confirms the last wave of the current one, and
gives that claim back, untouched, when it stops before running it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_skipqueue.outbox import Message, partitions, publish_many
from django_skipqueue.outbox.models import OutboxMessage, OutboxPartition
from django_skipqueue.outbox.relay import PARTITIONS_PER_ROUND, Relay
from django_skipqueue.outbox.transports.rabbitmq import RabbitMQTransport
from django_skipqueue.outbox.writing import partition_of
from tests.support.brokers import RabbitQueue, rabbitmq_vhost

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.rabbitmq]


@pytest.fixture
def relay() -> Iterator[tuple[Relay, RabbitQueue]]:
    with rabbitmq_vhost() as url:
        queue = RabbitQueue(url, "orders", "orders-seen")
        transport = RabbitMQTransport(url)
        transport.connect()
        try:
            yield Relay("default", transport, "relay-p"), queue
        finally:
            transport.close()
            queue.close()


def keys_in_distinct_partitions(count: int) -> list[str]:
    keys: dict[int, str] = {}
    n = 0
    while len(keys) < count:
        keys.setdefault(partition_of(f"k{n}", 16), f"k{n}")
        n += 1
    return list(keys.values())


def write(keys: list[str], per_key: int) -> None:
    messages = [Message("orders", {"n": n}, key=key, message_id=f"{key}-{n}")
                for n in range(per_key) for key in keys]  # fmt: skip
    publish_many(messages)


def claim_reads(queries: CaptureQueriesContext) -> int:
    """The leases taken: updates of the partitions table that set an owner (not NULL)."""
    updates = [q["sql"].split(None, 2) for q in queries.captured_queries]
    return sum(
        words[0] == "UPDATE" and words[1].strip('`"') == "skipqueue_outbox_partition"
        and "NULL" not in words[2]
        for words in updates
    )  # fmt: skip


def test_the_next_claim_is_taken_during_the_last_confirms_and_sent_by_the_next_round(relay):
    relay_, queue = relay
    keys = keys_in_distinct_partitions(PARTITIONS_PER_ROUND + 2)
    write(keys, 3)
    partitions.ensure_partitions("default", 16)

    with CaptureQueriesContext(connection) as first:
        done = relay_.run_round()
    assert done.sent == 3 * PARTITIONS_PER_ROUND
    assert claim_reads(first) == 2, "its own claim, and the next round's"
    with CaptureQueriesContext(connection) as second:
        done = relay_.run_round()
    assert done.sent == 3 * 2
    assert claim_reads(second) == 0, "it sends the claim taken during the first round"
    assert not OutboxMessage.objects.exists()
    received = queue.drain()
    for key in keys:  # per-key order across the two rounds
        assert [r.message_id for r in received if r.key == key] == [f"{key}-{n}" for n in range(3)]


def test_a_relay_that_stops_gives_the_next_claim_back_unstamped(relay):
    relay_, queue = relay
    keys = keys_in_distinct_partitions(PARTITIONS_PER_ROUND + 2)
    write(keys, 2)
    partitions.ensure_partitions("default", 16)

    relay_.run_round()
    left = list(OutboxMessage.objects.values_list("owner", "attempts"))
    assert len(left) == 2 * 2 and all(owner for owner, _ in left), "claimed for the next round"
    relay_.give_back()

    assert set(OutboxMessage.objects.values_list("owner", "attempts")) == {(None, 0)}
    assert not OutboxPartition.objects.filter(owner__isnull=False).exists()
    assert len(queue.drain()) == 2 * PARTITIONS_PER_ROUND
