"""Hostile and oversized keys, ids and headers: publish() refuses them with a clear error, and a
row stored before it did (written directly here) costs only itself: the transport refuses it
for good (a dead letter) and every message behind it, of another key in the same partition,
of the same key, or without a key, is published.

Only the relay and the brokers differ here, not the database: MariaDB only.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import BrokerUnavailable, InvalidMessage
from django_skipqueue.outbox import Message, partitions, publish, publish_many
from django_skipqueue.outbox.checks import check_outbox_settings
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from django_skipqueue.outbox.relay import Relay
from django_skipqueue.outbox.transports.nats import NatsTransport
from django_skipqueue.outbox.transports.rabbitmq import RabbitMQTransport
from django_skipqueue.outbox.writing import partition_of
from tests.support.brokers import NATS_PORT, NatsStream, RabbitQueue, rabbitmq_vhost

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

EURO_KEY = "€" * 100  # 100 characters, 300 bytes of UTF-8: the key that stalled the relay


def test_publish_counts_the_bytes_of_keys_ids_and_header_names():
    publish("orders", {}, key="€" * 85, message_id="é" * 127)  # 255 and 254 bytes: taken
    refused = [
        (Message("orders", {}, key="€" * 86), "key is 258 bytes of UTF-8, over 255"),
        (Message("orders", {}, message_id="é" * 128), "message_id is 256 bytes of UTF-8"),
        (Message("orders", {}, headers={"h" * 256: "v"}), "is 256 bytes of UTF-8, over 255"),
    ]
    for message, says in refused:
        with pytest.raises(InvalidMessage, match=says):
            publish_many([Message("orders", {}, key="fine"), message])
    assert OutboxMessage.objects.count() == 1, "a refused bulk inserts nothing"


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"key": "a\r\nPUB evil 5\r\nhello"}, "key holds '\\r' (U+000D) at position 1"),
        ({"key": "order 1"}, "key holds ' ' (U+0020) at position 5"),
        ({"key": "order\t1"}, "key holds '\\t' (U+0009) at position 5"),
        ({"key": "orders.*"}, "key holds '*' (U+002A) at position 7"),
        ({"key": "a>"}, "key holds '>' (U+003E) at position 1"),
        ({"key": "a\x00"}, "key holds '\\x00' (U+0000) at position 1"),
        ({"key": "a\u00a0b"}, "key holds '\\xa0' (U+00A0) at position 1"),
        ({"key": "a\ud800"}, "key holds '\\ud800' (U+D800) at position 1"),
        ({"message_id": "m-1\r\nX-Forged: 1"}, "message_id holds '\\r' (U+000D) at position 3"),
        ({"headers": {"X-Trace": "t\r\nNats-Msg-Id: x"}}, "'X-Trace' holds '\\r' (U+000D)"),
        ({"headers": {"X-Trace": " t"}}, "'X-Trace' starts or ends with a blank"),
        ({"headers": {"X Trace": "t"}}, "header name 'X Trace' holds ' ' (U+0020) at position 1"),
        ({"headers": {"X:Trace": "t"}}, "header name 'X:Trace' holds ':' (U+003A)"),
    ],
)
def test_publish_refuses_what_a_subject_or_a_header_cannot_carry(fields: dict[str, Any], says):
    with pytest.raises(InvalidMessage) as refused:
        publish("orders", {"n": 1}, **fields)
    assert says in str(refused.value)
    assert not OutboxMessage.objects.exists()


@pytest.mark.parametrize("destination", ["orders.>", "orders *", "orders\r\nPUB x 1"])
def test_a_destination_a_subject_cannot_carry_is_refused_by_publish_and_the_checks(destination):
    topics = {**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": destination}
    with override_settings(SKIPQUEUE_OUTBOX_TOPICS=topics):
        with pytest.raises(InvalidMessage, match="SKIPQUEUE_OUTBOX_TOPICS"):
            publish("orders", {"n": 1}, key="k")
        errors = [e for e in check_outbox_settings() if e.id == "django_skipqueue.E204"]
    assert len(errors) == 1 and repr(destination) in errors[0].msg
    assert not [e for e in check_outbox_settings() if e.id == "django_skipqueue.E204"]


def stored(key: str, message_id: str, headers: dict[str, Any] | None = None) -> OutboxMessage:
    """A row as an older version's publish() stored it: none of today's checks ran."""
    return OutboxMessage.objects.create(
        partition=partition_of(key, get_settings().OUTBOX_PARTITIONS),
        topic="orders",
        key=key,
        message_id=message_id,
        payload={"id": message_id},
        headers=headers or {},
    )


def neighbour_of(key: str) -> str:
    """A key of the same partition as ``key``."""
    count = get_settings().OUTBOX_PARTITIONS
    return next(
        f"k{n}" for n in range(1000) if partition_of(f"k{n}", count) == partition_of(key, count)
    )


def drain(relay: Relay) -> None:
    """Run rounds until one does nothing (at most ten: a wedged relay fails the test)."""
    for _ in range(10):
        if not relay.run_round().busy:
            return
    raise AssertionError("the relay still had work after ten rounds")


@pytest.fixture(scope="module")
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


@pytest.mark.rabbitmq
def test_a_stored_message_rabbitmq_cannot_carry_costs_only_itself(amqp_url):
    queue = RabbitQueue(amqp_url, "orders", "orders-hostile")
    same_partition = neighbour_of(EURO_KEY)
    stored(EURO_KEY, "euro-key")
    stored(same_partition, "same-partition-1")
    stored("k-long-header", "long-header", {"h" * 300: "v"})
    stored("k-long-header", "after-long-header")
    stored("k-unencodable", "unencodable", {"X-Count": 2**70})  # pika cannot encode it
    stored("", "keyless")
    stored(same_partition, "same-partition-2")
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)
    transport = RabbitMQTransport(amqp_url)
    transport.connect()
    try:
        with override_settings(SKIPQUEUE_OUTBOX_MAX_ATTEMPTS=2, SKIPQUEUE_OUTBOX_RETRY_BACKOFF=0):
            drain(Relay("default", transport, "relay-hostile"))
        received = [m.message_id for m in queue.drain()]
    finally:
        transport.close()
        queue.close()

    assert sorted(received) == [
        "after-long-header", "keyless", "same-partition-1", "same-partition-2"
    ]  # fmt: skip
    assert received.index("same-partition-1") < received.index("same-partition-2")
    left = {m.message_id: m for m in OutboxMessage.objects.all()}
    assert set(left) == {"euro-key", "long-header", "unencodable"}
    assert {m.status for m in left.values()} == {MessageStatus.DEAD}
    # Refused for good before anything was written: one attempt, then a dead letter.
    assert left["euro-key"].attempts == 1
    assert "routing key is 300 bytes of UTF-8, over 255" in left["euro-key"].last_error
    assert left["long-header"].attempts == 1
    assert "header name" in left["long-header"].last_error
    # An encoding error of one message: retried, a dead letter at the last attempt.
    assert left["unencodable"].attempts == 2
    assert "could not encode" in left["unencodable"].last_error
    assert "after 2 attempts" in left["unencodable"].last_error


@pytest.fixture
def orders() -> Iterator[NatsStream]:
    subject = f"orders-{secrets.token_hex(4)}"
    stream = NatsStream(subject)
    topics = {**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": subject}
    with override_settings(SKIPQUEUE_OUTBOX_TOPICS=topics):
        yield stream
    stream.close()


@pytest.mark.nats
def test_a_stored_message_nats_cannot_carry_costs_only_itself_and_injects_nothing(orders):
    injecting = "a\r\nPUB " + orders.subject + ".injected 2\r\nhi"
    same_partition = neighbour_of(injecting)
    stored(injecting, "injecting")
    stored(same_partition, "same-partition-1")
    stored("x*", "wildcard")
    stored("k-header", "forged-header", {"X-Trace": "t\r\nX-Forged: 1"})
    stored("k-header", "after-forged-header")
    stored("", "keyless")
    stored(same_partition, "same-partition-2")
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)
    transport = NatsTransport(f"nats://127.0.0.1:{NATS_PORT}")
    transport.connect()
    try:
        drain(Relay("default", transport, "relay-hostile"))
    except BrokerUnavailable as error:
        raise AssertionError(f"one message broke the connection: {error}") from error
    finally:
        transport.close()

    received = orders.messages()
    ids = [m.message_id for m in received]
    assert sorted(ids) == [
        "after-forged-header", "keyless", "same-partition-1", "same-partition-2"
    ]  # fmt: skip
    assert ids.index("same-partition-1") < ids.index("same-partition-2")
    assert {m.key for m in received} == {same_partition, "k-header", ""}, "nothing injected"
    assert all("X-Forged" not in m.headers for m in received)
    left = {m.message_id: m for m in OutboxMessage.objects.all()}
    assert set(left) == {"injecting", "wildcard", "forged-header"}
    for row in left.values():
        assert (row.status, row.attempts) == (MessageStatus.DEAD, 1), row.message_id
        assert "NATS cannot carry it" in row.last_error
    assert "holds '\\r' (U+000D) at position" in left["injecting"].last_error
    assert "holds '*' (U+002A)" in left["wildcard"].last_error
    assert "header 'X-Trace' holds '\\r'" in left["forged-header"].last_error
