"""An outage spends no attempt: rounds that got no answer from the broker (the connection lost
with the message in flight, or closed before it left) leave the message's attempts as they
were, so the first real refusal after the outage spends one, not the last one.

A private nats-server that the test kills and starts again on the same port and store: the
shared brokers are never stopped. The relay's code is the same on every database: MariaDB only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import BrokerUnavailable
from django_skipqueue.outbox import partitions, publish
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from django_skipqueue.outbox.relay import Relay
from django_skipqueue.outbox.transports import nats as nats_transport
from django_skipqueue.outbox.transports.nats import NatsTransport
from tests.support.brokers import NatsStream
from tests.support.private_brokers import PrivateNats
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.nats]


@pytest.fixture
def nats_server(tmp_path: Path, monkeypatch) -> Iterator[tuple[PrivateNats, str]]:
    """A private nats-server with a stream capturing the orders topic; a 1 s ack wait."""
    monkeypatch.setattr(nats_transport, "ACK_TIMEOUT", 1.0)
    server = PrivateNats(tmp_path / "jetstream").start()
    try:
        stream = NatsStream("orders", url=server.url)
        stream.close(delete=False)  # kept on disk across restarts
        yield server, stream.name
    finally:
        server.kill()


def jetstream_ready(server: PrivateNats, name: str) -> bool:
    """The restarted server has loaded the stream from its store."""
    try:
        stream = NatsStream("orders", url=server.url, name=name)
    except Exception:
        return False
    try:
        stream.messages()
    except Exception:
        return False
    finally:
        stream.close(delete=False)
    return True


def test_an_outage_spends_no_attempt_and_a_refusal_after_it_spends_one(nats_server):
    server, stream_name = nats_server
    # JetStream refuses this message for good: the stream's last sequence is not 99.
    refused = {"Nats-Expected-Last-Sequence": "99"}
    publish("orders", {"n": 1}, key="k", message_id="m-1", headers=refused)
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)
    transport = NatsTransport(server.url)
    transport.connect()
    relay = Relay("default", transport, "relay-outage")
    try:
        with override_settings(SKIPQUEUE_OUTBOX_MAX_ATTEMPTS=3):
            server.kill()
            # The first round finds the connection gone with its message on the wire, the
            # next ones a closed connection: no answer in any of them.
            for _ in range(4):
                with pytest.raises(BrokerUnavailable):
                    relay.run_round()
                row = OutboxMessage.objects.get()
                assert (row.status, row.attempts) == (MessageStatus.PENDING, 0), row.last_error
                with pytest.raises(BrokerUnavailable):
                    transport.connect()

            server.start()
            wait_for(lambda: jetstream_ready(server, stream_name), 20, what="JetStream")
            transport.connect()
            done = relay.run_round()
    finally:
        transport.close()

    assert (done.sent, done.retried, done.dead) == (0, 1, 0)
    row = OutboxMessage.objects.get()
    assert (row.status, row.attempts) == (MessageStatus.RETRY, 1), row.last_error
    assert "wrong last sequence" in row.last_error
