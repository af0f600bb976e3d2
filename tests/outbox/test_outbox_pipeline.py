"""A relay's database work rides on RabbitMQ's confirm waits: it claims its next round while
the broker confirms a wave of the current one, and settles a round while the broker confirms
the next round's first wave. A relay that stops settles what it sent and gives an unsent
claim back, untouched; a connection lost before the wait settles the round before all the
same."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_skipqueue.exceptions import BrokerUnavailable
from django_skipqueue.outbox import Message, partitions, publish_many
from django_skipqueue.outbox import relay as relay_module
from django_skipqueue.outbox.models import OutboxMessage, OutboxPartition
from django_skipqueue.outbox.relay import PARTITIONS_PER_ROUND, Relay
from django_skipqueue.outbox.transports import Outgoing, Result
from django_skipqueue.outbox.transports.rabbitmq import RabbitMQTransport
from django_skipqueue.outbox.writing import partition_of
from tests.support.brokers import RabbitQueue, rabbitmq_vhost

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.rabbitmq,
    pytest.mark.vendor_neutral,
]


class WatchedTransport(RabbitMQTransport):
    """RabbitMQ, noting the outbox's rows and leases right after each confirm wait's work."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        #: (rows in the outbox, partitions leased) after each wave's work, in order.
        self.after_work: list[tuple[int, int]] = []

    def send_many(
        self, messages: Sequence[Outgoing], while_waiting: Callable[[], object] | None = None
    ) -> list[Result | None]:
        def watched() -> None:
            if while_waiting is not None:
                while_waiting()
            leased = OutboxPartition.objects.filter(owner__isnull=False).count()
            self.after_work.append((OutboxMessage.objects.count(), leased))

        return super().send_many(messages, while_waiting=watched)


@pytest.fixture
def relay() -> Iterator[tuple[Relay, RabbitQueue]]:
    with rabbitmq_vhost() as url:
        queue = RabbitQueue(url, "orders", "orders-seen")
        transport = WatchedTransport(url)
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


def two_rounds_of(per_key: int) -> list[str]:
    """Write ``per_key`` messages to each of PARTITIONS_PER_ROUND + 2 keys in distinct
    partitions (two rounds of a relay); return the keys."""
    keys = keys_in_distinct_partitions(PARTITIONS_PER_ROUND + 2)
    write(keys, per_key)
    partitions.ensure_partitions("default", 16)
    return keys


def claim_reads(queries: CaptureQueriesContext) -> int:
    """The leases taken: updates of the partitions table that set an owner (not NULL)."""
    updates = [q["sql"].split(None, 2) for q in queries.captured_queries]
    return sum(
        words[0] == "UPDATE" and words[1].strip('`"') == "skipqueue_outbox_partition"
        and "NULL" not in words[2]
        for words in updates
    )  # fmt: skip


def test_the_next_claim_is_taken_during_a_confirm_wait_and_settles_this_round(relay):
    relay_, queue = relay
    keys = two_rounds_of(3)
    everything = 3 * len(keys)

    with CaptureQueriesContext(connection) as first:
        done = relay_.run_round()
    assert claim_reads(first) == 1 + 2, "its own claim, and the next round's, a partition each"
    assert done.deferred and done.sent == 0, "its settlement waits for the claimed next round"
    assert OutboxMessage.objects.count() == everything, "sent, confirmed, not yet settled"
    assert OutboxPartition.objects.filter(owner__isnull=False).count() == len(keys)
    transport = relay_.transport
    assert isinstance(transport, WatchedTransport)
    transport.after_work.clear()

    with CaptureQueriesContext(connection) as second:
        done = relay_.run_round()
    assert claim_reads(second) == 0, "it sends the claim taken during the first round"
    # The first round was settled during the second round's first confirm wait: its rows
    # deleted and its partitions given back before the second round's own settlement.
    assert transport.after_work[0] == (3 * 2, 2)
    assert done.sent == everything and not done.deferred
    assert not OutboxMessage.objects.exists()
    assert not OutboxPartition.objects.filter(owner__isnull=False).exists()
    received = queue.drain()
    for key in keys:  # per-key order across the two rounds
        assert [r.message_id for r in received if r.key == key] == [f"{key}-{n}" for n in range(3)]


def test_the_next_round_is_claimed_a_partition_per_confirm_wait(relay, monkeypatch):
    relay_, queue = relay
    monkeypatch.setattr(relay_module, "PIPELINE", 4)  # waves of 4: three waves a round here
    keys = two_rounds_of(3)
    transport = relay_.transport
    assert isinstance(transport, WatchedTransport)

    assert relay_.run_round().deferred
    # Its own 4 partitions, then one more leased in each of the first two waves' waits.
    assert [leased for _, leased in transport.after_work] == [5, 6, 6]
    transport.after_work.clear()
    done = relay_.run_round()
    # The first wave's wait settles the round before: 6 rows left, its 2 partitions leased.
    assert transport.after_work[0] == (3 * 2, 2)
    assert done.sent == 3 * len(keys) and not OutboxMessage.objects.exists()
    assert len(queue.drain()) == 3 * len(keys)


def test_a_relay_that_stops_settles_what_it_sent_and_gives_the_next_claim_back(relay):
    relay_, queue = relay
    keys = two_rounds_of(2)

    assert relay_.run_round().deferred
    left = list(OutboxMessage.objects.values_list("owner", "attempts"))
    assert len(left) == 2 * len(keys) and all(owner for owner, _ in left), "sent, and claimed"
    relay_.give_back()

    assert set(OutboxMessage.objects.values_list("owner", "attempts")) == {(None, 0)}
    assert OutboxMessage.objects.count() == 2 * 2, "the first round's rows deleted"
    assert not OutboxPartition.objects.filter(owner__isnull=False).exists()
    assert len(queue.drain()) == 2 * PARTITIONS_PER_ROUND


def test_a_connection_lost_before_the_wait_still_settles_the_round_before(relay):
    relay_, queue = relay
    keys = two_rounds_of(2)
    assert relay_.run_round().deferred

    relay_.transport.close()  # the next round's publish finds no connection
    with pytest.raises(BrokerUnavailable):
        relay_.run_round()

    left_keys = set(OutboxMessage.objects.values_list("key", flat=True))
    assert OutboxMessage.objects.count() == 2 * 2, "the first round's rows deleted"
    assert len(left_keys) == 2, "left: the two keys of the round that lost its connection"
    assert not OutboxPartition.objects.filter(owner__isnull=False).exists()
    assert len(queue.drain()) == 2 * PARTITIONS_PER_ROUND
    relay_.transport.connect()
    done = relay_.run_round()
    assert done.sent == 2 * len(keys), "the settled round's count is reported with the next"
    assert not OutboxMessage.objects.exists()
