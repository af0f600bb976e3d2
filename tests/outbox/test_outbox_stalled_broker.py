"""A relay stops on SIGTERM and SIGINT while its broker accepts the connection and never answers.

A broker process stopped with SIGSTOP, a firewall that drops packets or a hung load balancer
leave the relay inside a blocking call of the broker's client (pika's handshake and confirm
waits, nats-py's event loop), where a signal only set a flag: the relay stopped when the call
timed out, 5 to 45 s later, and pika's handshake timeout even ended it with a traceback. A
private port stands for the broker (tests/support/stall.py): the shared servers keep running.
"""

from __future__ import annotations

import signal
import time

import pytest

from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import OutboxMessage
from tests.support.brokers import NATS_PORT, RABBITMQ_PORT, NatsStream, RabbitQueue, rabbitmq_vhost
from tests.support.daemons import Daemon
from tests.support.stall import StallingProxy
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.vendor_neutral]

#: Seconds from the signal to the exit while the relay waits on a silent broker's handshake:
#: nothing is in flight, so the call is abandoned at once (the process still has to exit).
CONNECT_BOUND = 3.5
#: The same while confirms are awaited: the broker gets its grace (STOP_GRACE) to answer
#: them, then the relay gives the batch up (its messages stay in the outbox) and exits.
CONFIRM_BOUND = 8.0
RELAY_ENV = {
    "SKIPQUEUE_OUTBOX_RETRY_BACKOFF_MAX": "1",
    "SKIPQUEUE_OUTBOX_IDLE_POLL_SECONDS": "0.2",
}


def assert_stopped(relay: Daemon, signum: int, bound: float) -> list[str]:
    code, seconds = relay.stop_with(signum)
    lines = relay.lines()
    assert (code, seconds < bound) == (0, True), (code, seconds, lines[-8:])
    text = "\n".join(lines)
    assert "Traceback" not in text and "Task was destroyed" not in text, text
    assert len(lines) <= 4, text  # banner, the stop, totals (and one outage line at most)
    return lines


@pytest.mark.parametrize(
    ("scheme", "signum"), [("amqp", signal.SIGTERM), ("nats", signal.SIGINT)], ids=["amqp", "nats"]
)
def test_a_relay_stops_while_a_silent_broker_holds_its_handshake(
    scheme, signum, manage_py, child_env, tmp_path
):
    silent = StallingProxy()
    env = {**child_env, **RELAY_ENV}
    relay = Daemon(
        manage_py, env, tmp_path / "relay.log", "skipqueue_relay", "--broker", silent.url(scheme)
    )
    try:
        wait_for(lambda: silent.accepted >= 1, 30, what="the relay's connection")
        time.sleep(0.3)
        assert relay.process.poll() is None, relay.lines()
        lines = assert_stopped(relay, signum, CONNECT_BOUND)
        assert lines[-1].startswith("sent 0, retried 0"), lines
    finally:
        relay.kill()
        silent.close()


@pytest.mark.rabbitmq
def test_a_relay_stops_while_a_stalled_rabbitmq_owes_it_confirms(manage_py, child_env, tmp_path):
    with rabbitmq_vhost() as url:
        RabbitQueue(url, "orders", "orders-seen").close()
        vhost = url.rsplit("/", 1)[1]
        proxy = StallingProxy(("127.0.0.1", RABBITMQ_PORT))
        try:
            stalls_mid_batch(proxy, proxy.url("amqp", vhost), manage_py, child_env, tmp_path)
        finally:
            proxy.close()


@pytest.mark.nats
def test_a_relay_stops_while_a_stalled_nats_owes_it_acks(manage_py, child_env, tmp_path):
    stream = NatsStream("orders")
    proxy = StallingProxy(("127.0.0.1", NATS_PORT))
    try:
        stalls_mid_batch(proxy, proxy.url("nats"), manage_py, child_env, tmp_path)
    finally:
        proxy.close()
        stream.close()


def stalls_mid_batch(proxy: StallingProxy, url: str, manage_py, child_env, tmp_path) -> None:
    """A message sent; the broker goes silent; the next one waits for its confirm; SIGTERM."""
    publish("orders", {"n": 1}, key="k", message_id="before-the-stall")
    relay = Daemon(
        manage_py, {**child_env, **RELAY_ENV}, tmp_path / "relay.log",
        "skipqueue_relay", "--broker", url,
    )  # fmt: skip
    try:
        wait_for(lambda: not OutboxMessage.objects.exists(), 30, what="the first message sent")
        proxy.freeze()
        publish("orders", {"n": 2}, key="k", message_id="during-the-stall")
        proxy.wait_heard(b"during-the-stall", 30)
        time.sleep(0.5)
        assert relay.process.poll() is None, relay.lines()
        assert_stopped(relay, signal.SIGTERM, CONFIRM_BOUND)
    finally:
        relay.kill()
    # Never confirmed: it stays, for the next relay to send (marked as a possible duplicate).
    assert list(OutboxMessage.objects.values_list("message_id", flat=True)) == ["during-the-stall"]
