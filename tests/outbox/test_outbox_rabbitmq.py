"""The relay against the real RabbitMQ: what is committed arrives once, with its properties;
what rolled back never does; what RabbitMQ cannot route becomes a dead letter."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from django.db import transaction

from django_skipqueue.outbox import Message, partitions, publish, publish_many
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage, OutboxRelay
from django_skipqueue.outbox.relay import Relay
from django_skipqueue.outbox.transports.rabbitmq import RabbitMQTransport
from tests.support.brokers import RabbitQueue, rabbitmq_vhost
from tests.support.relays import burst

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.rabbitmq]


@pytest.fixture(scope="module")
def amqp_url() -> Iterator[str]:
    with rabbitmq_vhost() as url:
        yield url


@pytest.fixture
def orders(amqp_url: str) -> Iterator[RabbitQueue]:
    queue = RabbitQueue(amqp_url, "orders", "orders-seen")
    queue.channel.queue_purge("orders-seen")
    yield queue
    queue.close()


def test_committed_messages_arrive_with_their_properties_and_rolled_back_ones_never(
    orders, amqp_url, manage_py, child_env
):
    publish("orders", {"order_id": 1}, key="order-1", message_id="m-1", headers={"trace": "t1"})
    with pytest.raises(RuntimeError), transaction.atomic():
        publish("orders", {"order_id": 2}, key="order-2", message_id="m-2")
        raise RuntimeError("rolled back")
    publish("orders", {"order_id": 3}, key="order-3", message_id="m-3")

    output = burst(manage_py, child_env, amqp_url)

    received = sorted(orders.drain(), key=lambda r: r.message_id)  # two keys: any order
    assert [(r.message_id, r.body, r.key) for r in received] == [
        ("m-1", {"order_id": 1}, "order-1"),
        ("m-3", {"order_id": 3}, "order-3"),
    ]
    assert all(r.persistent for r in received)
    assert received[0].headers["trace"] == "t1"
    assert received[0].headers["X-Skipqueue-Attempt"] == "1"
    assert not OutboxMessage.objects.exists(), "sent rows are deleted"
    assert "sent 2," in output
    relay = OutboxRelay.objects.get()
    assert relay.sent == 2 and relay.stopped_at is not None
    assert relay.publish_rate is not None and relay.publish_rate > 0, "written at its last beat"


def test_messages_of_a_key_arrive_in_the_order_they_were_written(orders, amqp_url, manage_py,
                                                                 child_env):  # fmt: skip
    for batch in range(4):
        publish_many(
            [
                Message("orders", {"key": k, "n": batch * 50 + n}, key=f"k{k}")
                for n in range(50)
                for k in range(5)
            ]
        )
    burst(manage_py, child_env, amqp_url)
    received = orders.drain()
    assert len(received) == 1000
    for k in range(5):
        assert [r.body["n"] for r in received if r.key == f"k{k}"] == list(range(200))


def test_unroutable_messages_become_dead_letters_and_others_go_on(orders, amqp_url, manage_py,
                                                                  child_env):  # fmt: skip
    orders.channel.exchange_declare("audit", exchange_type="topic", durable=True)  # no queue
    publish("audit", {"n": 1}, key="a", message_id="lost-1")
    publish("orders", {"n": 2}, key="a", message_id="fine-2")
    output = burst(manage_py, child_env, amqp_url)

    dead = OutboxMessage.objects.get()
    assert dead.message_id == "lost-1"
    assert dead.status == MessageStatus.DEAD
    assert "unroutable" in dead.last_error
    assert [r.message_id for r in orders.drain()] == ["fine-2"]
    assert "dead letters 1" in output


def test_a_missing_exchange_is_retried_with_backoff_and_holds_its_key_back(
    orders, amqp_url, manage_py, child_env
):
    publish("payments", {"n": 1}, key="p-1", message_id="pay-1")  # payments-exchange is missing
    publish("orders", {"n": 2}, key="p-1", message_id="after-pay-1")
    publish("orders", {"n": 3}, key="other", message_id="other-3")
    burst(manage_py, child_env, amqp_url)

    waiting = {m.message_id: m for m in OutboxMessage.objects.all()}
    assert set(waiting) == {"pay-1", "after-pay-1"}
    assert waiting["pay-1"].status == MessageStatus.RETRY
    assert waiting["pay-1"].attempts == 1
    assert "NOT_FOUND" in waiting["pay-1"].last_error
    assert waiting["pay-1"].available_at is not None
    assert waiting["after-pay-1"].status == MessageStatus.PENDING
    assert waiting["after-pay-1"].attempts == 0
    assert [r.message_id for r in orders.drain()] == ["other-3"]


class Crash(BaseException):
    """Stands for SIGKILL: nothing after it runs in the relay (no settle, no delete)."""


class CrashAfterConfirms:
    """The real RabbitMQ transport, dying right after the broker confirmed ``count`` messages:
    the moment between the confirm and the delete."""

    def __init__(self, url: str, count: int) -> None:
        self.inner = RabbitMQTransport(url)
        self.inner.connect()
        self.count = count

    def send_many(self, messages, while_waiting=None):
        answers = self.inner.send_many(messages[: self.count], while_waiting)
        assert answers == [None] * len(answers), "the broker confirmed them all"
        self.count -= len(answers)
        if self.count == 0:
            raise Crash
        return answers

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_a_crash_between_confirm_and_delete_resends_with_the_same_ids_and_a_cause(
    orders, amqp_url
):
    publish_many([Message("orders", {"n": n}, key="k", message_id=f"m{n}") for n in range(10)])
    partitions.ensure_partitions("default", 16)
    crashing = CrashAfterConfirms(amqp_url, 4)
    with pytest.raises(Crash):
        Relay("default", crashing, "relay-a").run_round()
    crashing.inner.close()
    assert OutboxMessage.objects.count() == 10, "nothing is deleted without a settled round"

    transport = RabbitMQTransport(amqp_url)
    transport.connect()
    try:
        done = Relay("default", transport, "relay-b").run_round()
    finally:
        transport.close()

    assert done.sent == 10 and done.resent == 10
    received = orders.drain()
    assert [r.message_id for r in received] == [f"m{n}" for n in (0, 1, 2, 3, *range(10))]
    duplicates = received[4:8]
    assert all(r.headers["X-Skipqueue-Resent"] == "unsettled claim relay-a#1" for r in duplicates)
    assert all(r.headers["X-Skipqueue-Attempt"] == "2" for r in duplicates)
    assert not OutboxMessage.objects.exists()


def test_runworkers_runs_the_relay_as_one_more_child(orders, amqp_url, manage_py, child_env):
    publish_many([Message("orders", {"n": n}, key="k", message_id=f"rw-{n}") for n in range(20)])
    done = subprocess.run(
        [*manage_py, "runworkers", "--burst", "--processes", "1", "--relay", amqp_url],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r.message_id for r in orders.drain()] == [f"rw-{n}" for n in range(20)]
    assert not OutboxMessage.objects.exists()
    relay = OutboxRelay.objects.get()
    assert relay.sent == 20 and relay.stopped_at is not None


def test_nacks_in_a_wave_retry_exactly_the_messages_nacked_and_hold_their_keys_back(
    orders, amqp_url
):
    full = RabbitQueue(amqp_url, "audit", "audit-full")  # takes two, then nacks publishes
    try:
        full.channel.queue_delete("audit-full")
        arguments = {"x-max-length": 2, "x-overflow": "reject-publish"}
        full.channel.queue_declare("audit-full", durable=True, arguments=arguments)
        full.channel.queue_bind("audit-full", "audit", routing_key="#")
        keys = ["k0", "k1", "k2", "k3", "k2"]
        publish_many(
            [Message("audit", {"n": n}, key=k, message_id=f"a{n}") for n, k in enumerate(keys)]
            + [Message("orders", {"n": 9}, key="b", message_id="b9")]
        )
        partitions.ensure_partitions("default", 16)
        transport = RabbitMQTransport(amqp_url)
        transport.connect()
        try:
            done = Relay("default", transport, "relay-a").run_round()
        finally:
            transport.close()

        assert (done.sent, done.retried, done.dead) == (3, 2, 0)
        assert [r.message_id for r in full.drain()] == ["a0", "a1"]
        assert [r.message_id for r in orders.drain()] == ["b9"]
        waiting = {m.message_id: m for m in OutboxMessage.objects.all()}
        assert set(waiting) == {"a2", "a3", "a4"}
        for nacked in ("a2", "a3"):
            assert waiting[nacked].status == MessageStatus.RETRY
            assert "nacked" in waiting[nacked].last_error
        held = waiting["a4"]  # k2's next message: never sent after its key's nack
        assert (held.status, held.attempts, held.owner) == (MessageStatus.PENDING, 0, None)
    finally:
        full.channel.queue_delete("audit-full")
        full.close()
