"""Expiry: the sweep in the maintenance loop and its command, fenced against confirm."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connections, transaction
from django.test import override_settings

from django_skipqueue import reservations
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.exceptions import HoldExpired
from django_skipqueue.maintenance.loop import Maintenance
from django_skipqueue.reservations.models import HoldState, LedgerEntry, Reservation
from django_skipqueue.reservations.sweep import release_expired
from tests.support.reservation_audit import audit

pytestmark = pytest.mark.django_db(transaction=True)


def state(hold: Reservation) -> str:
    return Reservation.objects.get(pk=hold.pk).state


def expired_hold(quantity: int = 1, ttl: float = 0.05) -> Reservation:
    hold = reservations.reserve(5, 1, quantity, holder="cart", ttl=ttl)
    time.sleep(ttl + 0.05)
    return hold


def test_the_maintenance_loop_sweeps_expired_holds_on_its_own_timer():
    reservations.restock(5, 1, 4)
    live = reservations.reserve(5, 1, 1, holder="cart", ttl=60)
    hold = expired_hold(2)
    with override_settings(SKIPQUEUE_RESERVATION_SWEEP_INTERVAL=30):
        loop = Maintenance(reap_interval=60, promote_interval=60, runner="m1")
    [timer] = [timer for timer in loop.timers if timer.name == "release_expired"]
    assert timer.interval == 30
    loop.run_due()
    assert (state(hold), state(live)) == (HoldState.EXPIRED, HoldState.HELD)
    assert reservations.available(5, 1) == 3
    assert LedgerEntry.objects.filter(reason="expiry", reservation_id=hold.pk, delta=2).exists()


def test_a_loop_on_another_database_does_not_sweep():
    with override_settings(SKIPQUEUE_RESERVATION_DATABASE="other"):
        loop = Maintenance("default", reap_interval=60, promote_interval=60, runner="m1")
    assert "release_expired" not in [timer.name for timer in loop.timers]


def test_the_command_sweeps_once_in_batches(capsys):
    reservations.restock(5, 1, 10)
    holds = [expired_hold() for _ in range(5)]
    call_command("skipqueue_release_expired", "--batch", "2")
    assert capsys.readouterr().out.strip() == "released=5"
    assert {state(hold) for hold in holds} == {HoldState.EXPIRED}
    assert not audit().problems


def test_the_command_loops_until_sigterm(manage_py, child_env):
    reservations.restock(5, 1, 2)
    hold = reservations.reserve(5, 1, 2, holder="cart", ttl=1)
    sweeper = subprocess.Popen(
        [*manage_py, "skipqueue_release_expired", "--interval", "0.2"], env=child_env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while state(hold) == HoldState.HELD:
            assert time.monotonic() < deadline and sweeper.poll() is None
            time.sleep(0.1)
    finally:
        sweeper.send_signal(signal.SIGTERM)
        output, _ = sweeper.communicate(timeout=60)
    assert sweeper.returncode == 0, output
    assert "released=1" in output and output.rstrip().endswith("stopped"), output


@pytest.mark.skip_locked
def test_a_hold_being_confirmed_is_skipped_by_the_sweep(close_thread_connections):
    """Confirm locks the reservation first; a sweep meanwhile skips it and then sees it sold."""
    reservations.restock(5, 1, 1)
    hold = reservations.reserve(5, 1, 1, holder="cart", ttl=0.5)
    swept: list[int] = []
    with transaction.atomic():
        reservations.confirm(hold)  # live now; committed only after its expiry
        time.sleep(0.6)
        sweep = threading.Thread(target=in_thread, args=(lambda: swept.append(release_expired()),))
        sweep.start()
        sweep.join(30)
    assert swept == [0]
    assert release_expired() == 0
    assert state(hold) == HoldState.CONFIRMED
    assert not audit().problems


@pytest.mark.skip_locked
def test_a_confirm_waiting_for_the_sweep_finds_the_hold_expired(close_thread_connections):
    reservations.restock(5, 1, 1)
    hold = expired_hold()
    outcome: list[object] = []

    def confirm() -> None:
        try:
            outcome.append(reservations.confirm(hold.pk).state)
        except HoldExpired as error:
            outcome.append(error)
        finally:
            connections.close_all()

    with transaction.atomic():
        assert release_expired() == 1  # holds the reservation's lock until the block ends
        buyer = threading.Thread(target=confirm)
        buyer.start()
        time.sleep(0.5)
        assert buyer.is_alive(), "the confirm waits for the sweep's lock"
    buyer.join(30)
    assert isinstance(outcome[0], HoldExpired)
    assert state(hold) == HoldState.EXPIRED
    assert not audit().problems


@pytest.mark.skip_locked
def test_confirms_and_sweeps_at_the_same_instant_never_both_win(close_thread_connections):
    """Holds expiring together; buyers confirm each one as two sweepers run, at expiry."""
    reservations.restock(5, 1, 60)
    holds = [reservations.reserve(5, 1, 1, holder=f"c{n}", ttl=600) for n in range(60)]
    Reservation.objects.update(expires_at=DatabaseNowPlus(1.0))  # all expire together
    expiry = Reservation.objects.first().expires_at.timestamp()
    confirmed: list[int] = []
    refused: list[int] = []

    def buyer(mine: list[Reservation]) -> None:
        for n, hold in enumerate(mine):
            # Paced across the expiry (some before, most after) however fast a confirm is.
            wait_until(expiry - 0.3 + 0.04 * n)
            try:
                reservations.confirm(hold)
                confirmed.append(hold.pk)
            except HoldExpired:
                refused.append(hold.pk)
        connections.close_all()

    def sweeper() -> None:
        wait_until(expiry - 0.02)
        while any(thread.is_alive() for thread in threads[:3]):
            release_expired(batch=3)
        connections.close_all()

    threads = [threading.Thread(target=buyer, args=(holds[n::3],)) for n in range(3)]
    threads += [threading.Thread(target=sweeper) for _ in range(2)]  # after the buyers: [:3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    release_expired()
    states = dict(Reservation.objects.values_list("pk", "state"))
    assert sorted(confirmed + refused) == sorted(hold.pk for hold in holds)
    assert {states[pk] for pk in confirmed} <= {HoldState.CONFIRMED}
    assert {states[pk] for pk in refused} <= {HoldState.EXPIRED}
    assert confirmed, "no confirm came before the expiry: the race did not happen"
    assert refused, "no hold expired first: the race did not happen"
    assert not audit().problems


def in_thread(work) -> None:
    try:
        work()
    finally:
        connections.close_all()


def wait_until(epoch: float) -> None:
    time.sleep(max(0.0, epoch - time.time()))
