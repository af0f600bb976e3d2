"""What publish() accepts reaches a consumer byte for byte, through the real RabbitMQ and NATS.

The property: every message that publish() takes (hostile keys, ids, headers and payloads
included) is sent by the relay and read back by a consumer with the same body, message id,
key and headers; none becomes a dead letter, none stalls the ones behind it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from hypothesis import strategies as st

from django_skipqueue.exceptions import InvalidMessage
from django_skipqueue.outbox import partitions, publish
from django_skipqueue.outbox.models import OutboxMessage
from django_skipqueue.outbox.relay import Relay
from django_skipqueue.outbox.transports import Transport
from django_skipqueue.outbox.transports.nats import NatsTransport
from django_skipqueue.outbox.transports.rabbitmq import RabbitMQTransport
from tests.properties.strategies import hostile_text, json_values, run, seeded
from tests.support.brokers import NATS_PORT, NatsStream, RabbitQueue, Received, rabbitmq_vhost

# The relay's claims differ by database and run on each in tests/outbox; what this checks, the
# wire between publish() and a consumer, does not: MariaDB runs it.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.vendor_neutral]

messages = st.lists(
    st.tuples(
        json_values,
        hostile_text,
        st.one_of(st.none(), hostile_text),
        st.dictionaries(hostile_text, hostile_text, max_size=2),
    ),
    min_size=1,
    max_size=8,
)


def published(batch: list[tuple[Any, str, str | None, dict[str, str]]]) -> dict[str, Any]:
    """Publish what publish() accepts of ``batch``; return it by message id."""
    taken = {}
    for payload, key, message_id, headers in batch:
        try:
            row = publish("orders", payload, key=key, message_id=message_id, headers=headers)
        except InvalidMessage:
            continue
        taken[row.message_id] = (payload, key, headers)
    return taken


def relay_all(transport: Transport) -> None:
    """Run the relay until the outbox is empty; fail if a message stays or dies."""
    partitions.ensure_partitions("default", 16)
    transport.connect()
    relay = Relay("default", transport, f"relay-{secrets.token_hex(3)}")
    try:
        for _ in range(50):
            result = relay.run_round()
            assert result.dead == 0, list(OutboxMessage.objects.values("key", "last_error"))
            if not OutboxMessage.objects.exists():
                return
        pytest.fail(f"left in the outbox: {list(OutboxMessage.objects.values())}")
    finally:
        relay.give_back()
        transport.close()


def check(received: list[Received], taken: dict[str, Any]) -> None:
    assert sorted(r.message_id for r in received) == sorted(taken)
    for message in received:
        payload, key, headers = taken[message.message_id]
        assert (message.body, message.key) == (payload, key)
        assert {name: message.headers.get(name) for name in headers} == headers


@pytest.fixture(scope="module")
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


@pytest.mark.rabbitmq
@seeded
def test_what_publish_takes_reaches_a_rabbitmq_consumer_unchanged(amqp_url, seed_value):
    queue = RabbitQueue(amqp_url, "orders", f"seen-{secrets.token_hex(3)}")

    def body(batch: list[Any]) -> None:
        taken = published(batch)
        relay_all(RabbitMQTransport(amqp_url))
        check(queue.drain(), taken)

    try:
        run(seed_value, body, messages, examples=8)
    finally:
        queue.close()


@pytest.mark.nats
@seeded
def test_what_publish_takes_reaches_a_nats_consumer_unchanged(seed_value):
    subject = f"orders-{secrets.token_hex(4)}"
    topics = {**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": subject}

    def body(batch: list[Any]) -> None:
        stream = NatsStream(subject, duplicate_window=120.0)
        try:
            taken = published(batch)
            relay_all(NatsTransport(f"nats://127.0.0.1:{NATS_PORT}"))
            check(stream.messages(), taken)
        finally:
            stream.close()

    with override_settings(SKIPQUEUE_OUTBOX_TOPICS=topics):
        run(seed_value, body, messages, examples=5)


@pytest.mark.nats
def test_a_non_ascii_id_and_header_value_reach_a_nats_consumer_unchanged():
    """Found by a random seed: the examples that failed when the reader took nats-py's
    ``Header`` objects for the values sent (tests/support/brokers.py reads them as text)."""
    subject = f"orders-{secrets.token_hex(4)}"
    stream = NatsStream(subject, duplicate_window=120.0)
    try:
        with override_settings(
            SKIPQUEUE_OUTBOX_TOPICS={**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": subject}
        ):
            taken = published([({"a": [1]}, "", "¡", {"0": "¡x€😀"}), ({}, "k", None, {})])
            relay_all(NatsTransport(f"nats://127.0.0.1:{NATS_PORT}"))
        assert len(taken) == 2 and "¡" in taken
        check(stream.messages(), taken)
    finally:
        stream.close()
