"""What a worker's Waker reads: queue names only, and at most WAKEUP_MAX_RATE times a second
on average (a fifth of a second's worth back to back).

The flood across hosts is in tests/reliability/multihost/test_wakeups.py; these check the two
rules on one socket, in process.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest

from django_skipqueue import wakeup
from django_skipqueue.backend import QUEUE_NAME_PATTERN

pytestmark = pytest.mark.vendor_neutral


@pytest.fixture
def sender() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    yield sock
    sock.close()


def send(sock: socket.socket, waker: wakeup.Waker, *payloads: bytes) -> None:
    host, _, port = (waker.address or "").rpartition(":")
    for payload in payloads:
        sock.sendto(payload, (host, int(port)))
    time.sleep(0.05)  # delivered (loopback)


def test_malformed_datagrams_are_ignored_and_logged_once(sender, caplog):
    waker = wakeup.Waker("127.0.0.1", names_only=True)
    try:
        with caplog.at_level(logging.WARNING, logger="django_skipqueue.wakeup"):
            send(sender, waker, b"default", b"\xff\xfe", b"x' OR '1'='1", b"a" * 600, b"b,emails")
            heard = waker.wait(1.0, listen=True)
            send(sender, waker, b"\x00")
            waker.wait(1.0, listen=True)
    finally:
        waker.close()
    assert heard == {"default", "b", "emails"}
    assert (waker.datagrams, waker.ignored) == (6, 4)
    lines = [r.getMessage() for r in caplog.records if "datagrams ignored" in r.getMessage()]
    assert len(lines) == 1 and "count=3" in lines[0]


def test_the_outbox_relay_reads_any_payload(sender):
    waker = wakeup.Waker("127.0.0.1")
    try:
        send(sender, waker, b"\xff")
        assert waker.wait(1.0, listen=True) and waker.ignored == 0
    finally:
        waker.close()


def test_datagrams_are_read_at_most_max_rate_times_a_second(sender):
    waker = wakeup.Waker("127.0.0.1", max_rate=5, names_only=True)
    try:
        send(sender, waker, b"first")
        assert waker.wait(1.0, listen=True) == {"first"}
        send(sender, waker, b"second", b"third")
        began = time.monotonic()
        early = waker.wait(0.1, listen=True)  # within the 0.2 s gap: not read
        late = waker.wait(1.0, listen=True) or waker.wait(1.0, listen=True)
        waited = time.monotonic() - began
    finally:
        waker.close()
    assert early == set()
    assert late == {"second", "third"}, "read together after the gap"
    assert 0.1 <= waited < 1.0


def test_a_burst_of_reads_goes_through_then_the_rate_holds(sender):
    # At 50 a second the budget is READ_BURST_SECONDS of reads (10): wake-ups 5 ms apart are
    # read as they come, as long as they average under the rate (the fixed gap of 1 / rate
    # this replaced kept each read after the first waiting 15 ms of its 20). A flood then gets
    # one read per 1 / rate s, plus the burst.
    rate = 50
    burst = int(rate * wakeup.READ_BURST_SECONDS)
    address = wakeup.parse_address
    waker = wakeup.Waker("127.0.0.1", max_rate=rate, names_only=True)
    try:
        heard, waits = [], []
        for index in range(burst):
            sender.sendto(f"q{index}".encode(), address(waker.address or ""))
            time.sleep(0.005)  # delivered (loopback)
            began = time.monotonic()
            heard.append(waker.wait(1.0, listen=True))
            waits.append(time.monotonic() - began)
        reads, flood_began = 0, time.monotonic()
        while time.monotonic() - flood_began < 0.5:  # a flood: a datagram before every wait
            sender.sendto(b"flood", address(waker.address or ""))
            reads += bool(waker.wait(0.05, listen=True))
        flooded_for = time.monotonic() - flood_began
    finally:
        waker.close()
    assert heard == [{f"q{index}"} for index in range(burst)]
    assert sum(waits) < 0.1, waits  # with the gap: at least 9 x 15 ms
    assert 5 <= reads <= rate * flooded_for + burst, (reads, flooded_for)


def test_the_datagram_pattern_accepts_exactly_the_queue_names():
    names = [b"default", b"a.b:c-d_e", b"Z" * 64, b"", b"-x", b"a b", b"Z" * 65, "é".encode()]
    for name in names:
        wanted = bool(QUEUE_NAME_PATTERN.match(name.decode()))
        assert bool(wakeup.DATAGRAM_PATTERN.fullmatch(name)) == wanted, name
