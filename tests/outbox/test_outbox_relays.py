"""Several real relay processes over many keys: every committed message arrives, in order per
key, and a relay killed with SIGKILL loses nothing; its duplicates carry the same message_id
and say why they were sent again."""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from django_skipqueue.outbox import Message, publish_many
from django_skipqueue.outbox.models import OutboxMessage
from tests.support.brokers import RabbitQueue, Received, rabbitmq_vhost
from tests.support.relays import RelayProcess
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.rabbitmq, pytest.mark.mysql]


@pytest.fixture
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


def write(keys: int, per_key: int) -> None:
    """Write per_key messages for each key, interleaved, in transactions of 500."""
    messages = [
        Message("orders", {"key": k, "seq": n}, key=f"k{k}", message_id=f"k{k}-{n}")
        for n in range(per_key)
        for k in range(keys)
    ]
    for start in range(0, len(messages), 500):
        publish_many(messages[start : start + 500])


def check_delivery(received: list[Received], keys: int, per_key: int) -> int:
    """Assert every message arrived, in order per key once duplicates are dropped; return the
    number of duplicates (each must be marked as sent again)."""
    by_key: dict[str, list[Received]] = defaultdict(list)
    for message in received:
        by_key[message.key].append(message)
    assert sorted(by_key) == sorted(f"k{k}" for k in range(keys))
    duplicates = 0
    for key, messages in by_key.items():
        seen: set[str] = set()
        first_copies = []
        for message in messages:
            if message.message_id in seen:
                duplicates += 1
                assert "X-Skipqueue-Resent" in message.headers, message
                continue
            seen.add(message.message_id)
            first_copies.append(message.body["seq"])
        assert first_copies == list(range(per_key)), key
    return duplicates


def relays(count: int, manage_py, env, url: str, logs: Path, name: str = "relay"):
    return [
        RelayProcess(manage_py, env, logs / f"{name}-{i}.log", "--broker", url)
        for i in range(count)
    ]


def run_and_kill(count, keys, per_key, manage_py, child_env, amqp_url, tmp_path, kills=1):
    queue = RabbitQueue(amqp_url, "orders", "all-orders", durable=False)
    write(keys, per_key)
    env = {**child_env, "SKIPQUEUE_OUTBOX_LEASE_SECONDS": "5"}
    running = relays(count, manage_py, env, amqp_url, tmp_path)
    total = keys * per_key
    try:
        for kill in range(kills):
            # Kill a relay at a random moment while the outbox drains.
            left = total * (1 - (kill + 1) / (kills + 2))
            wait_for(
                lambda left=left: OutboxMessage.objects.count() < left,
                timeout=240,
                what="the relays to make progress",
            )
            time.sleep(random.uniform(0, 0.3))
            victim = running.pop(random.randrange(len(running)))
            victim.kill()
            running += relays(1, manage_py, env, amqp_url, tmp_path, f"replacement{kill}")
        wait_for(lambda: not OutboxMessage.objects.exists(), timeout=300, what="an empty outbox")
    finally:
        for relay in running:
            relay.stop()
    received = queue.drain()
    queue.close()
    return received


def test_four_relays_keep_order_per_key_and_a_killed_relay_loses_nothing(
    manage_py, child_env, amqp_url, tmp_path
):
    keys, per_key = 20, int(os.environ.get("SKIPQUEUE_OUTBOX_TEST_PER_KEY", "150"))
    received = run_and_kill(4, keys, per_key, manage_py, child_env, amqp_url, tmp_path, kills=2)
    check_delivery(received, keys, per_key)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("SKIPQUEUE_OUTBOX_FULL_SCALE"),
    reason="the issue's full scale (minutes on 2 cores): set SKIPQUEUE_OUTBOX_FULL_SCALE=1",
)
def test_eight_relays_fifty_keys_twenty_thousand_messages(manage_py, child_env, amqp_url,
                                                           tmp_path):  # fmt: skip
    received = run_and_kill(8, 50, 400, manage_py, child_env, amqp_url, tmp_path, kills=3)
    check_delivery(received, 50, 400)
