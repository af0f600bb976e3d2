"""A relay's life on the shared RabbitMQ (a vhost of the test's own): woken by a commit when
idle, a message refused every time ends a dead letter after its attempts, and a connection cut
mid-batch (the broker keeps running) loses nothing and keeps the order per key."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

import pytest

from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage, OutboxRelay
from tests.outbox.test_outbox_relays import check_delivery, write
from tests.support.brokers import RabbitQueue, rabbitmq_vhost
from tests.support.relays import RelayProcess, burst
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.rabbitmq, pytest.mark.mysql]


@pytest.fixture
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


def test_an_idle_relay_publishes_on_the_commit_not_at_its_next_poll(
    amqp_url, manage_py, child_env, tmp_path
):
    queue = RabbitQueue(amqp_url, "orders", "orders-seen")
    env = {**child_env, "SKIPQUEUE_OUTBOX_IDLE_POLL_SECONDS": "120"}
    relay = RelayProcess(manage_py, env, tmp_path / "relay.log", "--broker", amqp_url)
    try:
        wait_for(
            lambda: OutboxRelay.objects.filter(wakeup_address__isnull=False).exists(),
            60,
            what="the relay to register",
        )
        time.sleep(1.5)  # past its first looks: waiting for its 120 s poll or a datagram
        began = time.monotonic()
        publish("orders", {"n": 1}, key="k", message_id="woken-1")
        received = wait_for(queue.drain, 30, interval=0.01, what="the message at the consumer")
        waited = time.monotonic() - began
    finally:
        relay.stop()
        queue.close()
    assert [m.message_id for m in received] == ["woken-1"]
    assert waited < 30, "the wake-up datagram, not the 120 s poll"


def test_a_message_refused_every_time_is_a_dead_letter_after_its_attempts(
    amqp_url, manage_py, child_env
):
    queue = RabbitQueue(amqp_url, "orders", "orders-seen")
    publish("payments", {"n": 1}, key="p-1", message_id="pay-1")  # its exchange is missing
    publish("orders", {"n": 2}, key="p-1", message_id="after-pay-1")
    env = {
        **child_env,
        "SKIPQUEUE_OUTBOX_MAX_ATTEMPTS": "3",
        "SKIPQUEUE_OUTBOX_RETRY_BACKOFF": "0.2",
    }
    try:
        output = ""
        for _ in range(3):  # each burst tries what is due, then leaves
            time.sleep(1)  # the retries' backoff: 0.2 s, then 0.4 s
            output = burst(manage_py, env, amqp_url)
        dead = OutboxMessage.objects.get()
        assert (dead.message_id, dead.status, dead.attempts) == ("pay-1", MessageStatus.DEAD, 3)
        assert "NOT_FOUND" in dead.last_error and "(after 3 attempts)" in dead.last_error
        assert "dead letters 1" in output
        # The dead letter stepped aside: its key's next message went on.
        assert [m.message_id for m in queue.drain()] == ["after-pay-1"]
    finally:
        queue.close()


def close_connections(url: str) -> None:
    """Close every connection to the test's vhost; the broker itself keeps running."""
    vhost = unquote(urlsplit(url).path.lstrip("/"))
    subprocess.run(
        ["rabbitmqctl", "-q", "close_all_connections", "-p", vhost, "cut by the test"],
        check=True,
        capture_output=True,
        timeout=60,
    )


def test_a_connection_cut_mid_batch_loses_nothing_and_keeps_the_order(
    amqp_url, manage_py, child_env, tmp_path
):
    keys, per_key = 10, 1500  # long enough that the cuts land while the relays publish
    RabbitQueue(amqp_url, "orders", "orders-kept").close()  # declared, then left alone
    write(keys, per_key)
    env = {**child_env, "SKIPQUEUE_OUTBOX_RETRY_BACKOFF_MAX": "1"}
    running = [
        RelayProcess(manage_py, env, tmp_path / f"relay-{i}.log", "--broker", amqp_url)
        for i in range(2)
    ]
    total = keys * per_key
    try:
        for share in (0.8, 0.5):
            wait_for(
                lambda share=share: OutboxMessage.objects.count() < total * share,
                120,
                what="progress",
            )
            close_connections(amqp_url)
        wait_for(lambda: not OutboxMessage.objects.exists(), 180, what="an empty outbox")
    finally:
        for relay in running:
            relay.stop()
    logs = "".join(relay.log() for relay in running)
    assert "broker unreachable, retrying" in logs, "the relays lost their connections"
    queue = RabbitQueue(amqp_url, "orders", "orders-kept")
    try:
        check_delivery(queue.drain(), keys, per_key)
    finally:
        queue.close()
