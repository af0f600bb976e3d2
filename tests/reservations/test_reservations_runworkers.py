"""runworkers sweeps expired holds in its maintenance loop when the reservations app is in."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from django_skipqueue import reservations
from django_skipqueue.reservations.models import HoldState, LedgerEntry, Reservation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_runworkers_gives_expired_holds_back_on_its_timer(manage_py, child_env):
    reservations.restock(3, 1, 2)
    live = reservations.reserve(3, 1, 1, holder="cart-1", ttl=600)
    hold = reservations.reserve(3, 1, 1, holder="cart-2", ttl=0.5)
    env = {**child_env, "SKIPQUEUE_LOG_LEVEL": "WARNING"}
    workers = subprocess.Popen(
        [*manage_py, "runworkers", "--processes", "1", "--threads", "1"], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts runworkers slowly
        while Reservation.objects.get(pk=hold.pk).state == HoldState.HELD:
            assert time.monotonic() < deadline and workers.poll() is None
            time.sleep(0.1)
    finally:
        workers.send_signal(signal.SIGTERM)
        output, _ = workers.communicate(timeout=60)
    assert Reservation.objects.get(pk=hold.pk).state == HoldState.EXPIRED, output
    assert Reservation.objects.get(pk=live.pk).state == HoldState.HELD
    assert LedgerEntry.objects.filter(reason="expiry", reservation_id=hold.pk).count() == 1
    assert reservations.available(3, 1) == 1
