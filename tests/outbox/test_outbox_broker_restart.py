"""A broker that goes away mid-batch and comes back: relays reconnect with backoff, nothing is
lost, order per key holds. Private brokers only: the shared ones are never restarted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from django_skipqueue.outbox.models import OutboxMessage
from tests.outbox.test_outbox_relays import check_delivery, write
from tests.support.brokers import NatsStream, RabbitQueue
from tests.support.private_brokers import PrivateNats, PrivateRabbitMQ
from tests.support.relays import RelayProcess
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.slow]

KEYS, PER_KEY = 10, 150


def start_relays(count: int, manage_py, child_env, url: str, logs: Path) -> list[RelayProcess]:
    env = {
        **child_env,
        "SKIPQUEUE_OUTBOX_LEASE_SECONDS": "5",
        "SKIPQUEUE_OUTBOX_RETRY_BACKOFF_MAX": "1",  # reconnect at least once a second
    }
    return [
        RelayProcess(manage_py, env, logs / f"relay-{i}.log", "--broker", url)
        for i in range(count)
    ]


def drain_across(outage, relays: list[RelayProcess]) -> None:
    """Wait for some progress, run ``outage`` (the broker goes and comes back), then wait for
    an empty outbox."""
    total = KEYS * PER_KEY
    try:
        wait_for(lambda: OutboxMessage.objects.count() < total * 0.8, 120, what="progress")
        outage()
        wait_for(lambda: not OutboxMessage.objects.exists(), 180, what="an empty outbox")
    finally:
        for relay in relays:
            relay.stop()


@pytest.fixture
def rabbitmq() -> Iterator[PrivateRabbitMQ]:
    broker = PrivateRabbitMQ()
    try:
        yield broker.start()
    finally:
        broker.remove()


def test_rabbitmq_restart_mid_batch_loses_nothing(rabbitmq, manage_py, child_env, tmp_path):
    queue = RabbitQueue(rabbitmq.url, "orders", "orders-kept")
    queue.close()
    write(KEYS, PER_KEY)
    relays = start_relays(2, manage_py, child_env, rabbitmq.url, tmp_path)

    def outage() -> None:
        rabbitmq.stop()
        time.sleep(1)
        rabbitmq.start()

    drain_across(outage, relays)
    logs = "".join(relay.log() for relay in relays)
    assert "broker unreachable, retrying" in logs, "the relays saw the outage"
    queue = RabbitQueue(rabbitmq.url, "orders", "orders-kept")
    try:
        check_delivery(queue.drain(), KEYS, PER_KEY)
    finally:
        queue.close()


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[PrivateNats]:
    server = PrivateNats(tmp_path / "jetstream")
    try:
        yield server.start()
    finally:
        server.kill()


def test_nats_killed_and_restarted_mid_batch_loses_nothing_and_dedups(
    nats_server, manage_py, child_env, tmp_path
):
    stream = NatsStream("orders", url=nats_server.url, duplicate_window=300.0)
    name = stream.name
    stream.close(delete=False)
    write(KEYS, PER_KEY)
    relays = start_relays(2, manage_py, child_env, nats_server.url, tmp_path)

    def outage() -> None:
        nats_server.kill()
        time.sleep(1)
        nats_server.start()

    drain_across(outage, relays)
    assert "broker unreachable, retrying" in "".join(relay.log() for relay in relays)
    stream = NatsStream("orders", url=nats_server.url, name=name)
    try:
        received = stream.messages()
    finally:
        stream.close()
    check_delivery(received, KEYS, PER_KEY)
    # Resent messages carried their Nats-Msg-Id: JetStream's window dropped every one.
    assert len(received) == KEYS * PER_KEY
