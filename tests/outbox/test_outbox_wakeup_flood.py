"""A flood of wake-up datagrams costs an idle relay at most SKIPQUEUE_WAKEUP_MAX_RATE rounds a
second, as it costs a worker that many claim queries: the relay reads its datagrams with the
worker's Waker and its bound."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from django_skipqueue.outbox.models import OutboxRelay
from django_skipqueue.outbox.process import RelayProcess
from django_skipqueue.wakeup import READ_BURST_SECONDS
from tests.support.brokers import rabbitmq_vhost

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.rabbitmq, pytest.mark.mysql]

FLOOD_SECONDS = 1.5


def leases_under_flood(url: str) -> int:
    """Run an idle relay in this process while another thread floods its wake-up port with
    datagrams naming partition 3; return the rounds it ran."""
    relay = RelayProcess("default", url)
    stop = threading.Event()

    def flood() -> None:
        while not OutboxRelay.objects.filter(name=relay.name).exists() and not stop.is_set():
            time.sleep(0.01)
        host, _, port = OutboxRelay.objects.get(name=relay.name).wakeup_address.rpartition(":")
        time.sleep(0.3)  # past its first look: idle
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        ends = time.monotonic() + FLOOD_SECONDS
        while time.monotonic() < ends:
            sender.sendto(b"3", (host, int(port)))
            time.sleep(0.0005)
        sender.close()
        os.kill(os.getpid(), signal.SIGTERM)  # the relay's own stop: after the current round

    flooder = threading.Thread(target=flood)
    flooder.start()
    try:
        with CaptureQueriesContext(connection) as queries:
            relay.run()
    finally:
        stop.set()
        flooder.join()
    # A round reads the partitions table once: the look for those with work, or (woken with
    # named partitions) the locking read of their leases.
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    return sum("skipqueue_outbox_partition" in sql for sql in reads)


def test_a_flood_of_datagrams_wakes_a_relay_at_most_max_rate_times_a_second():
    with rabbitmq_vhost() as url:
        with override_settings(SKIPQUEUE_WAKEUP_MAX_RATE=10, SKIPQUEUE_OUTBOX_IDLE_POLL_SECONDS=5):
            bounded = leases_under_flood(url)
        with override_settings(
            SKIPQUEUE_WAKEUP_MAX_RATE=None, SKIPQUEUE_OUTBOX_IDLE_POLL_SECONDS=5
        ):
            unbounded = leases_under_flood(url)
    # 10 reads a second while flooded (and the Waker's burst, READ_BURST_SECONDS of them
    # back to back), each followed by a round, and the first round on start.
    burst = max(1.0, 10 * READ_BURST_SECONDS)
    assert 2 <= bounded <= 10 * (FLOOD_SECONDS + 0.3) + 2 + burst
    assert unbounded > 2 * bounded, "without the bound, each datagram is a round"
