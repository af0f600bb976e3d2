"""The wake-up datagram of a commit names the partitions that received messages; a rolled-back
publish sends none."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from django.db import transaction

from django_skipqueue.outbox import Message, publish_many, relays
from django_skipqueue.outbox.models import OutboxRelay
from django_skipqueue.outbox.relays import named_partitions
from django_skipqueue.outbox.writing import partition_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    """A live relay row whose wake-up address is this UDP socket."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(5)
    host, port = udp.getsockname()
    OutboxRelay.objects.create(
        name="listener", hostname="h", pid=1, broker="amqp://x", wakeup_address=f"{host}:{port}"
    )
    relays.forget_addresses()
    yield udp
    udp.close()
    relays.forget_addresses()


def test_the_datagram_names_the_partitions_of_the_committed_messages(listening):
    keys = ["order-1", "order-2", "order-1"]
    with transaction.atomic():
        publish_many([Message("orders", {"n": n}, key=key) for n, key in enumerate(keys)])
    payload = listening.recv(512).decode()
    assert named_partitions(payload.split(",")) == {partition_of(k, 16) for k in keys}


def test_a_rolled_back_publish_wakes_nobody_and_a_bare_datagram_means_look_everywhere(
    listening,
):
    with pytest.raises(RuntimeError), transaction.atomic():
        publish_many([Message("orders", {"n": 1}, key="order-1")])
        raise RuntimeError
    listening.settimeout(0.5)
    with pytest.raises(TimeoutError):
        listening.recv(512)
    assert relays.notify("default") == 1
    assert named_partitions(listening.recv(512).decode().split(",")) is None
