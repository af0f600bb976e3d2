"""Every copy a consumer may see twice says so: a message whose earlier copy may have reached the
broker carries ``X-Skipqueue-Resent`` on every later attempt, whatever happened in between.

The trace is the claim token a row keeps while an earlier publish of it is unsettled. A later
claim that never hands the row over (a round cut before its wave, a claim given back when the
relay stops) must leave that trace as it found it, and a publish the broker never answered on a
live connection (JetStream's ack lost) must leave one of its own. Real brokers throughout: a
vhost of the test's own on the shared RabbitMQ, a stream of its own on the shared NATS, and a
private nats-server for the one that is frozen.
"""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import BrokerUnavailable
from django_skipqueue.outbox import Message, partitions, publish_many
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from django_skipqueue.outbox.relay import PIPELINE, Relay
from django_skipqueue.outbox.transports import Transport, transport_for
from django_skipqueue.outbox.transports import nats as nats_transport
from django_skipqueue.outbox.writing import partition_of
from tests.outbox.test_outbox_relay_life import close_connections
from tests.outbox.test_outbox_relays import check_delivery, write
from tests.support.brokers import NATS_PORT, NatsStream, RabbitQueue, Received, rabbitmq_vhost
from tests.support.private_brokers import PrivateNats
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.vendor_neutral]


class Crash(Exception):
    """The relay process dies: nothing after this point runs."""


class CrashAfterConfirms(Transport):
    """A real transport that dies once the broker confirmed ``count`` messages: its round
    never settles, as if the relay were killed between the confirms and the delete."""

    def __init__(self, url: str, count: int) -> None:
        self.inner = transport_for(url)
        self.inner.connect()
        self.count = count

    def send_many(self, messages, while_waiting=None):
        answers = self.inner.send_many(messages[: self.count], while_waiting)
        assert answers == [None] * len(messages[: self.count]), "the broker confirmed them all"
        self.count -= len(answers)
        if self.count == 0:
            raise Crash
        return answers

    def close(self) -> None:
        self.inner.close()


def round_on(url: str, name: str, hint: frozenset[int] | None = None) -> Relay:
    """A relay named ``name`` that ran one round on a connection of its own to ``url``."""
    transport = transport_for(url)
    transport.connect()
    relay = Relay("default", transport, name)
    try:
        relay.run_round(hint)
    finally:
        transport.close()
    return relay


def crash_after_publishing(url: str, count: int) -> None:
    """relay-a publishes ``count`` messages, all confirmed, and dies before deleting them."""
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)
    crashing = CrashAfterConfirms(url, count)
    try:
        with pytest.raises(Crash):
            Relay("default", crashing, "relay-a").run_round()
    finally:
        crashing.close()
    assert set(OutboxMessage.objects.values_list("owner", flat=True)) == {"relay-a#1"}


def two_keys_in_two_partitions() -> tuple[str, str]:
    count = get_settings().OUTBOX_PARTITIONS
    keys = [f"key-{n}" for n in range(50)]
    first = keys[0]
    other = next(k for k in keys if partition_of(k, count) != partition_of(first, count))
    return first, other


def assert_resent_copies(
    received: list[Received], message_ids: list[str], claim: str, attempt: str = "2"
) -> None:
    """Each of ``message_ids`` arrived twice; the second copy says which claim it repeats."""
    copies = [r for r in received if r.message_id in set(message_ids)]
    assert [r.message_id for r in copies] == message_ids * 2
    for again in copies[len(message_ids) :]:
        assert again.headers["X-Skipqueue-Attempt"] == attempt, again
        assert again.headers.get("X-Skipqueue-Resent") == f"unsettled claim {claim}", again


@pytest.fixture
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


@pytest.mark.rabbitmq
def test_a_round_cut_before_its_second_wave_keeps_the_trace_of_the_unsettled_claim(amqp_url):
    # The cut test's failure under load, step by step: the first copies reach the broker and
    # their claim is left unsettled (relay-a); the next round on them (relay-b) finds its
    # connection cut when its first wave goes out, so its second wave never leaves; the round
    # after it (relay-c) must still mark the second wave's messages as sent again.
    per_key = PIPELINE + 44
    RabbitQueue(amqp_url, "orders", "orders-kept").close()  # bound, then left alone
    write(1, per_key)
    crash_after_publishing(amqp_url, per_key)

    transport = transport_for(amqp_url)
    transport.connect()
    # Returns once RabbitMQ sent Connection.Close: it ignores what relay-b publishes after it.
    close_connections(amqp_url)
    try:
        with pytest.raises(BrokerUnavailable):
            Relay("default", transport, "relay-b").run_round()
    finally:
        transport.close()
    rows = list(OutboxMessage.objects.order_by("id"))
    assert [r.owner for r in rows] == ["relay-b#1"] * PIPELINE + ["relay-a#1"] * 44
    assert {r.attempts for r in rows[PIPELINE:]} == {1}, "no attempt spent on the second wave"

    round_on(amqp_url, "relay-c")
    assert not OutboxMessage.objects.exists()
    queue = RabbitQueue(amqp_url, "orders", "orders-kept")
    try:
        received = queue.drain()
    finally:
        queue.close()
    assert check_delivery(received, 1, per_key) == per_key
    second_wave = [f"k0-{n}" for n in range(PIPELINE, per_key)]
    assert_resent_copies(received, second_wave, "relay-a#1")


@pytest.fixture
def nats_stream() -> Iterator[tuple[str, NatsStream]]:
    """A stream of the test's own on the shared NATS; JetStream's duplicate window is short,
    so a copy sent again after it is stored and its headers can be read."""
    subject = f"orders-{secrets.token_hex(4)}"
    stream = NatsStream(subject, duplicate_window=0.5)
    topics = {**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": subject}
    with override_settings(SKIPQUEUE_OUTBOX_TOPICS=topics):
        yield f"nats://127.0.0.1:{NATS_PORT}", stream
    stream.close()


@pytest.fixture(params=[pytest.param("rabbitmq", marks=pytest.mark.rabbitmq),
                        pytest.param("nats", marks=pytest.mark.nats)])  # fmt: skip
def broker(request) -> Iterator[tuple[str, object]]:
    """A broker URL and the test's consumer on it: a RabbitMQ queue or a JetStream stream."""
    if request.param == "rabbitmq":
        url = request.getfixturevalue("amqp_url")
        queue = RabbitQueue(url, "orders", "orders-kept")
        yield url, queue
        queue.close()
    else:
        yield request.getfixturevalue("nats_stream")


def received_by(consumer: object) -> list[Received]:
    if isinstance(consumer, RabbitQueue):
        return consumer.drain()
    assert isinstance(consumer, NatsStream)
    return consumer.messages()


def test_a_claim_given_back_when_the_relay_stops_keeps_the_trace_of_the_one_before(broker):
    url, consumer = broker
    held, other = two_keys_in_two_partitions()
    held_ids = [f"{held}-{n}" for n in range(5)]
    publish_many([Message("orders", {"n": n}, key=held, message_id=i)
                  for n, i in enumerate(held_ids)])  # fmt: skip
    crash_after_publishing(url, len(held_ids))
    publish_many([Message("orders", {"n": n}, key=other, message_id=f"{other}-{n}")
                  for n in range(5)])  # fmt: skip

    # relay-b sends the other key; while the broker confirms it, it claims the held key's
    # partition for its next round, then stops before that round and gives the claim back.
    count = get_settings().OUTBOX_PARTITIONS
    relay_b = round_on(url, "relay-b", hint=frozenset({partition_of(other, count)}))
    assert OutboxMessage.objects.filter(owner="relay-b#2").count() == len(held_ids)
    relay_b.give_back()
    rows = OutboxMessage.objects.order_by("id")
    assert [(r.owner, r.attempts) for r in rows] == [("relay-a#1", 1)] * len(held_ids)

    time.sleep(1.0)  # past the NATS stream's 0.5 s duplicate window: the copies are stored
    round_on(url, "relay-c")
    assert not OutboxMessage.objects.exists()
    assert_resent_copies(received_by(consumer), held_ids, "relay-a#1")


@pytest.fixture
def frozen_nats(tmp_path: Path, monkeypatch) -> Iterator[tuple[PrivateNats, NatsStream]]:
    """A private nats-server with a stream capturing the orders topic, and a 1 s ack wait."""
    monkeypatch.setattr(nats_transport, "ACK_TIMEOUT", 1.0)
    server = PrivateNats(tmp_path / "jetstream").start()
    try:
        stream = NatsStream("orders", url=server.url, duplicate_window=0.5)
        try:
            yield server, stream
        finally:
            stream.close()
    finally:
        server.kill()


@pytest.mark.nats
def test_a_publish_jetstream_took_without_acking_in_time_is_retried_as_resent(frozen_nats):
    server, stream = frozen_nats
    assert server.process is not None
    publish_many([Message("orders", {"n": n}, key="k", message_id=f"k-{n}") for n in range(3)])
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)
    transport = transport_for(server.url)
    transport.connect()
    try:
        with override_settings(SKIPQUEUE_OUTBOX_RETRY_BACKOFF=0.5):
            # The server stops reading: the messages wait in its socket and no ack comes back
            # within the 1 s wait, on a connection that stays up (pings are minutes apart).
            server.process.send_signal(signal.SIGSTOP)
            try:
                done = Relay("default", transport, "relay-a").run_round()
            finally:
                server.process.send_signal(signal.SIGCONT)
            assert (done.sent, done.retried) == (0, 3)
            rows = list(OutboxMessage.objects.order_by("id"))
            # No answer: no attempt spent (docs/discussions/outbox-ordering.md).
            assert {(r.status, r.owner, r.attempts) for r in rows} == {
                (MessageStatus.RETRY, "relay-a#1", 0)
            }
            # Once it reads again, JetStream stores them; the retry goes after its backoff,
            # past the 0.5 s duplicate window, so its copies are stored too.
            wait_for(lambda: len(stream.messages()) == 3, 10, what="the first copies stored")
            time.sleep(1.0)  # the retry's backoff and the duplicate window run out
            done = Relay("default", transport, "relay-b").run_round()
        assert done.sent == 3
    finally:
        transport.close()
    copies = [f"k-{n}" for n in range(3)]
    assert_resent_copies(stream.messages(), copies, "relay-a#1", attempt="1")
