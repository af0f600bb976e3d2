"""The daemons outlive what they depend on, as ``runworkers`` does: started with their broker or
database down they wait, with one line when it goes and one when it is back; SIGTERM and SIGINT
stop them within seconds, also while they wait; a one-shot run (``--burst``, ``--once``) exits
1 in one line. Private servers only: the shared MariaDB, RabbitMQ and NATS are never stopped.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from django_skipqueue.conf import get_settings
from django_skipqueue.outbox import partitions, publish
from django_skipqueue.outbox.models import OutboxMessage, OutboxPartition
from tests.support.brokers import NatsStream, RabbitQueue, rabbitmq_vhost
from tests.support.daemons import Daemon, Run, run_once
from tests.support.mariadb_server import PrivateMariaDB, available, free_port
from tests.support.private_brokers import PrivateNats, PrivateRabbitMQ
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

#: Seconds a daemon gets to exit after SIGTERM or SIGINT (systemd's default is 90).
GRACE = 10
DOWN = "unreachable, retrying"
BACK = "reachable again"
RELAY_ENV = {
    "SKIPQUEUE_OUTBOX_RETRY_BACKOFF_MAX": "1",
    "SKIPQUEUE_OUTBOX_IDLE_POLL_SECONDS": "0.5",
}


def assert_quiet(lines: list[str], most: int) -> None:
    text = "\n".join(lines)
    assert len(lines) <= most, text
    assert "Traceback" not in text, text


def assert_gave_up(run: Run, most_seconds: float = 20) -> None:
    """A one-shot run with its dependency away: exit 1, a line or three, no traceback."""
    assert run.code == 1, "\n".join(run.lines)
    assert run.seconds < most_seconds, run.seconds
    assert_quiet(run.lines, 3)
    assert run.lines[-1].startswith("CommandError: "), run.lines


def stopped(daemon: Daemon, signum: int = signal.SIGTERM) -> None:
    code, seconds = daemon.stop_with(signum)
    assert (code, seconds < GRACE) == (0, True), (code, seconds, daemon.lines()[-5:])


def existing_stream(server: PrivateNats, subject: str) -> None:
    """Create a stream for ``subject`` on ``server``, then stop it: the stream is back from the
    server's store when the server is. Created after the restart instead, it raced the relay:
    a loaded machine let the relay publish first, and a subject no stream captures makes the
    message a dead letter."""
    server.start()
    try:
        NatsStream(subject, url=server.url).close(delete=False)
    finally:
        server.kill()


def test_the_relay_waits_for_nats_and_stops_on_a_signal(manage_py, child_env, tmp_path):
    server = PrivateNats(tmp_path / "jetstream")
    existing_stream(server, "orders")  # its port is free again: nothing listens
    publish("orders", {"n": 1}, key="k", message_id="after-the-outage")
    env = {**child_env, **RELAY_ENV}
    relay = Daemon(
        manage_py, env, tmp_path / "relay.log", "skipqueue_relay", "--broker", server.url
    )
    try:
        began = time.monotonic()
        assert_gave_up(
            run_once(manage_py, env, "skipqueue_relay", "--burst", "--broker", server.url)
        )
        time.sleep(max(0.0, 6 - (time.monotonic() - began)))
        assert relay.process.poll() is None, relay.lines()
        assert_quiet(relay.lines(), 2)
        assert relay.count(f"broker {DOWN}") == 1

        server.start()
        wait_for(lambda: not OutboxMessage.objects.exists(), 30, what="the message sent")
        assert relay.count(f"broker {BACK}") == 1

        server.kill()  # gone while idle: its keepalive sees it
        wait_for(lambda: relay.count(f"broker {DOWN}") == 2, 30, what="the second outage")
        time.sleep(3)
        stopped(relay, signal.SIGTERM)
        assert_quiet(relay.lines(), 5)  # banner, down, back, down, totals
    finally:
        relay.kill()
        server.kill()


def test_the_relay_waits_for_rabbitmq_and_stops_on_a_signal(manage_py, child_env, tmp_path):
    broker = PrivateRabbitMQ()  # not started: its port is free
    publish("orders", {"n": 1}, key="k", message_id="after-the-outage")
    env = {**child_env, **RELAY_ENV, "SKIPQUEUE_OUTBOX_BROKER_URL": broker.url}
    relay = Daemon(manage_py, env, tmp_path / "relay.log", "skipqueue_relay")
    closed = Daemon(
        manage_py, env, tmp_path / "closed.log", "skipqueue_relay",
        "--broker", f"amqp://127.0.0.1:{free_port()}/",
    )  # fmt: skip
    try:
        began = time.monotonic()
        unknown = "amqp://guest:secret@no-such-host.invalid/"
        run = run_once(manage_py, {**env, "SKIPQUEUE_OUTBOX_BROKER_URL": unknown},
                       "skipqueue_relay", "--burst")  # fmt: skip
        assert_gave_up(run)
        assert "secret" not in "\n".join(run.lines)
        time.sleep(max(0.0, 6 - (time.monotonic() - began)))
        for daemon in (relay, closed):
            assert daemon.process.poll() is None, daemon.lines()
            assert_quiet(daemon.lines(), 2)
        stopped(closed, signal.SIGINT)

        broker.start()
        RabbitQueue(broker.url, "orders", "orders-seen").close()
        wait_for(lambda: not OutboxMessage.objects.exists(), 60, what="the message sent")
        assert relay.count(f"broker {BACK}") == 1
        stopped(relay, signal.SIGTERM)
        assert_quiet(relay.lines(), 4)  # banner, down, back, totals
    finally:
        relay.kill()
        closed.kill()
        broker.remove()


@pytest.fixture
def server(tmp_path) -> Iterator[PrivateMariaDB]:
    if not available():
        pytest.skip("needs mariadbd")
    server = PrivateMariaDB(tmp_path / "mariadb").start()
    server.query("CREATE DATABASE daemons")
    yield server
    server.stop()


DAEMONS = {
    "scheduler": ["skipqueue_scheduler", "--interval", "1"],
    "sweeper": ["skipqueue_release_expired", "--interval", "1"],
    "relay": ["skipqueue_relay", "--broker", "nats://127.0.0.1:1/"],
}
ONCE = {
    "scheduler": ["skipqueue_scheduler", "--once"],
    "sweeper": ["skipqueue_release_expired"],
    "relay": ["skipqueue_relay", "--burst", "--broker", "nats://127.0.0.1:1/"],
}


def test_the_daemons_wait_for_their_database(server, manage_py, child_env, tmp_path):
    env = {**child_env, **RELAY_ENV, "DATABASE_URL": server.url("daemons")}
    subprocess.run([*manage_py, "migrate", "-v", "0"], env=env, check=True, timeout=300)
    server.stop()
    waiting = {
        name: Daemon(manage_py, env, tmp_path / f"{name}.log", *args)
        for name, args in DAEMONS.items()
    }
    closed = {**env, "DATABASE_URL": f"mysql://root@127.0.0.1:{free_port()}/daemons"}
    stopping = {
        name: Daemon(manage_py, closed, tmp_path / f"{name}-stopping.log", *args)
        for name, args in DAEMONS.items()
    }
    try:
        for args in ONCE.values():
            assert_gave_up(run_once(manage_py, env, *args))
        time.sleep(3)
        for name, daemon in {**waiting, **stopping}.items():
            assert daemon.process.poll() is None, (name, daemon.lines())
            assert_quiet(daemon.lines(), 1)
            assert daemon.count(f"database {DOWN}") == 1, (name, daemon.lines())
        for daemon in stopping.values():
            stopped(daemon, signal.SIGTERM)

        server.start()
        for name, daemon in waiting.items():
            wait_for(lambda d=daemon: d.count(f"database {BACK}"), 30, what=f"{name} back")
        time.sleep(1.5)
        for daemon in waiting.values():
            lines = daemon.lines()
            assert_quiet(lines[: lines.index(next(x for x in lines if BACK in x)) + 1], 2)

        server.stop()  # gone again while they run: a line each, then SIGTERM while it is away
        for name, daemon in waiting.items():
            wait_for(lambda d=daemon: d.count(f"database {DOWN}") == 2, 30, what=f"{name} down")
        time.sleep(2)
        for daemon in waiting.values():
            stopped(daemon, signal.SIGTERM)
            text = "\n".join(daemon.lines())
            assert "Traceback" not in text and daemon.count(f"database {DOWN}") == 2, text
    finally:
        for daemon in [*waiting.values(), *stopping.values()]:
            daemon.kill()


@pytest.mark.rabbitmq
def test_a_burst_says_why_it_waits_for_the_lease_of_a_stopped_relay(manage_py, child_env):
    message = publish("orders", {"n": 1}, key="k", message_id="behind-a-lease")
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)
    with rabbitmq_vhost() as url:
        RabbitQueue(url, "orders", "orders-seen").close()
        until = timezone.now() + timedelta(seconds=8)  # the relay starts in a second or two
        OutboxPartition.objects.filter(number=message.partition).update(
            owner="killed-relay", lease_until=until
        )
        run = run_once(manage_py, child_env, "skipqueue_relay", "--burst", "--broker", url)
    assert run.code == 0, run.lines
    said = [line for line in run.lines if "waiting up to" in line]
    assert len(said) == 1, run.lines
    assert (
        f"for the lease of partitions {message.partition} held by a relay that stopped "
        "without giving them back relays=killed-relay"
    ) in said[0]
    assert 2 < run.seconds < 30, run.seconds
    assert not OutboxMessage.objects.exists()


def test_runworkers_relay_url_errors_hide_the_password(manage_py, child_env):
    run = run_once(manage_py, child_env, "runworkers", "--burst", "--relay", "http://u:secret@h/")
    assert run.code == 1, run.lines
    assert run.lines[-1] == (
        "CommandError: --relay must start with amqp://, amqps://, nats://, tls://, "
        "not 'http://u:***@h/'"
    ), run.lines
