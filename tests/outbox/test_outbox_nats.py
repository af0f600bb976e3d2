"""The relay against the real NATS JetStream: acks, Nats-Msg-Id, order per key, dead letters."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from django_skipqueue.outbox import Message, partitions, publish, publish_many
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from django_skipqueue.outbox.relay import Relay
from django_skipqueue.outbox.transports.nats import NatsTransport
from tests.support.brokers import NATS_PORT, NatsStream
from tests.support.relays import burst

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.nats,
    pytest.mark.vendor_neutral,
]

URL = f"nats://127.0.0.1:{NATS_PORT}"


@pytest.fixture
def orders() -> Iterator[NatsStream]:
    """A stream of the test's own, on a subject of its own: the topic "orders" goes there."""
    subject = f"orders-{secrets.token_hex(4)}"
    stream = NatsStream(subject, duplicate_window=120.0)
    topics = {**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": subject}
    with override_settings(SKIPQUEUE_OUTBOX_TOPICS=topics):
        yield stream
    stream.close()


@pytest.fixture
def nats_env(orders: NatsStream, child_env: dict[str, str]) -> dict[str, str]:
    return {**child_env, "SKIPQUEUE_TEST_ORDERS_DESTINATION": orders.subject}


def test_committed_messages_reach_the_stream_in_order_per_key(orders, manage_py, nats_env):
    publish_many(
        [
            Message("orders", {"n": n}, key=f"order-{k}", message_id=f"o{k}-{n}")
            for n in range(30)
            for k in range(3)
        ]
    )
    output = burst(manage_py, nats_env, URL)

    received = orders.messages()
    assert len(received) == 90
    for k in range(3):
        mine = [r for r in received if r.key == f"order-{k}"]
        assert [r.body["n"] for r in mine] == list(range(30))
        assert [r.message_id for r in mine] == [f"o{k}-{n}" for n in range(30)]
    assert received[0].headers["X-Skipqueue-Topic"] == "orders"
    assert received[0].message_id == "o0-0"
    assert not OutboxMessage.objects.exists()
    assert "sent 90," in output


def test_jetstream_drops_a_resent_message_within_its_duplicate_window(orders):
    publish("orders", {"n": 1}, key="k", message_id="same-1")
    partitions.ensure_partitions("default", 16)
    transport = NatsTransport(URL)
    transport.connect()
    try:
        relay = Relay("default", transport, "relay-a")
        assert relay.run_round().sent == 1
        publish("orders", {"n": 1}, key="k", message_id="other-id")  # a new row, a new id
        OutboxMessage.objects.filter(message_id="other-id").update(message_id="same-1")
        assert relay.run_round().sent == 1  # the broker acked it as a duplicate
    finally:
        transport.close()
    assert [r.message_id for r in orders.messages()] == ["same-1"]


def test_subjects_no_stream_captures_and_oversized_messages_become_dead_letters(
    orders, manage_py, nats_env
):
    publish("audit", {"n": 1}, key="a", message_id="no-stream")
    big = {"blob": "x" * 1_100_000}  # over the server's default max_payload of 1 MB
    env = {**nats_env, "SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES": "2000000"}
    with override_settings(SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES=2_000_000):
        publish("orders", big, key="b", message_id="too-big")
    publish("orders", {"n": 3}, key="b", message_id="after-big")
    burst(manage_py, env, URL)

    dead = {m.message_id: m for m in OutboxMessage.objects.all()}
    assert set(dead) == {"no-stream", "too-big"}
    assert all(m.status == MessageStatus.DEAD for m in dead.values())
    assert "no JetStream stream" in dead["no-stream"].last_error
    assert "max_payload" in dead["too-big"].last_error
    assert [r.message_id for r in orders.messages()] == ["after-big"]
