"""A message RabbitMQ refuses as too large (it closes the channel with 406): the row stays as a
dead letter with the broker's error, and the relay goes on with the other messages, in order.

A private node with a small ``max_message_size``: the shared broker's limits are never changed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_skipqueue.outbox import Message, publish_many
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage, OutboxRelay
from tests.support.brokers import RabbitQueue
from tests.support.private_brokers import PrivateRabbitMQ
from tests.support.relays import burst

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.rabbitmq,
    pytest.mark.slow,
    pytest.mark.vendor_neutral,
]

LIMIT = 4096


@pytest.fixture(scope="module")
def rabbitmq() -> Iterator[PrivateRabbitMQ]:
    broker = PrivateRabbitMQ(config=f"max_message_size = {LIMIT}\n")
    try:
        yield broker.start()
    finally:
        broker.remove()


def test_an_oversized_message_becomes_a_dead_letter_and_the_others_go_on(
    rabbitmq, manage_py, child_env
):
    queue = RabbitQueue(rabbitmq.url, "orders", "orders-seen")
    try:
        big = {"blob": "x" * (LIMIT + 100)}  # under SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES
        plan = [
            ("k1", "a1", {"n": 1}),
            ("k2", "b1", {"n": 1}),
            ("k1", "a2", big),
            ("k1", "a3", {"n": 3}),
            ("k2", "b2", {"n": 2}),
            ("k1", "a4", {"n": 4}),
        ]
        publish_many([Message("orders", body, key=key, message_id=i) for key, i, body in plan])

        output = burst(manage_py, child_env, rabbitmq.url)

        received = queue.drain()
        first_arrivals: dict[str, str] = {}
        for message in received:
            if message.message_id in first_arrivals.values():
                # Taken before the refusal closed the channel, so sent again, and marked.
                assert "channel closed" in message.headers["X-Skipqueue-Resent"]
            first_arrivals.setdefault(f"{message.key}/{message.message_id}", message.message_id)
        in_order = {
            key: [i for k, i in (kv.split("/") for kv in first_arrivals) if k == key]
            for key in ("k1", "k2")
        }
        assert in_order == {"k1": ["a1", "a3", "a4"], "k2": ["b1", "b2"]}
        assert "a2" not in {m.message_id for m in received}

        left = OutboxMessage.objects.get()
        assert (left.message_id, left.status) == ("a2", MessageStatus.DEAD)
        assert "406" in left.last_error and str(LIMIT) in left.last_error
        assert left.payload == big, "the row is kept whole"
        assert "sent 5, retried 0, dead letters 1" in output
        assert OutboxRelay.objects.get().dead == 1
    finally:
        queue.close()
