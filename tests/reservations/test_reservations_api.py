"""The reservation API on one connection: what each call changes, and what bad input does not."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from django_skipqueue import reservations
from django_skipqueue.exceptions import (
    HoldExpired,
    HoldNotActive,
    InsufficientStock,
    InvalidReservation,
    PoolFull,
    UnknownPool,
)
from django_skipqueue.reservations.models import (
    HoldState,
    LedgerEntry,
    Pool,
    Reservation,
    Unit,
)
from django_skipqueue.reservations.sweep import release_expired
from tests.support.reservation_audit import audit

pytestmark = pytest.mark.django_db(transaction=True)


def ledger() -> list[tuple[str, int]]:
    return list(LedgerEntry.objects.order_by("id").values_list("reason", "delta"))


def nothing_changed_since(before: tuple[int, int, int]) -> bool:
    now = (Reservation.objects.count(), LedgerEntry.objects.count(), Unit.objects.count())
    free = Unit.objects.filter(reserved_by__isnull=True).count()
    return now == before and free == Unit.objects.count()


def counts() -> tuple[int, int, int]:
    return Reservation.objects.count(), LedgerEntry.objects.count(), Unit.objects.count()


def test_reserve_confirm_release_and_their_ledger():
    assert reservations.restock(10, 1, 5, reference="delivery 1") == 5
    hold = reservations.reserve(10, 1, 2, holder="cart-1", ttl=60, reference="order-9")
    assert (hold.state, hold.quantity, hold.unit_seqs) == (HoldState.HELD, 2, [1, 2])
    assert hold.expires_at - hold.created_at == timedelta(seconds=60)
    assert reservations.available(10, 1) == 3
    assert reservations.confirm(hold).state == HoldState.CONFIRMED
    other = reservations.reserve(10, 1, 3, holder="cart-2", ttl=timedelta(minutes=5))
    assert other.unit_seqs == [3, 4, 5]
    assert reservations.available(10, 1) == 0
    assert reservations.release(other.pk).state == HoldState.RELEASED
    assert reservations.available(10, 1) == 3
    assert ledger() == [("restock", 5), ("hold", -2), ("sale", 0), ("hold", -3), ("release", 3)]
    assert Unit.objects.count() == 3, "sold units leave the pool"
    assert not audit().problems


def test_insufficient_stock_holds_nothing():
    reservations.restock(10, 1, 2)
    before = counts()
    with pytest.raises(InsufficientStock, match="3 asked, 2 free"):
        reservations.reserve(10, 1, 3, holder="cart", ttl=60)
    assert nothing_changed_since(before)


@pytest.mark.parametrize(
    ("quantity", "ttl", "holder", "message"),
    [
        (0, 60, "cart", "quantity must be a whole number from 1 to 1000"),
        (-1, 60, "cart", "quantity"),
        (1001, 60, "cart", "SKIPQUEUE_RESERVATION_POOL_CAP"),
        (1.5, 60, "cart", "quantity"),
        (True, 60, "cart", "quantity"),
        (1, 0, "cart", "ttl must be positive"),
        (1, -5, "cart", "ttl must be positive"),
        (1, timedelta(0), "cart", "ttl must be positive"),
        (1, float("inf"), "cart", "ttl must be positive"),
        (1, "60", "cart", "ttl must be seconds or a timedelta"),
        (1, 60, "", "holder must be a non-empty string"),
        (1, 60, "x" * 201, "holder"),
    ],
)
def test_bad_input_is_refused_before_anything_is_held(quantity, ttl, holder, message):
    reservations.restock(10, 1, 5)
    before = counts()
    with pytest.raises(InvalidReservation, match=message):
        reservations.reserve(10, 1, quantity, holder=holder, ttl=ttl)
    assert nothing_changed_since(before)


def test_unknown_items_are_named_as_such():
    reservations.restock(10, 1, 1)
    with pytest.raises(UnknownPool, match="no pool for item 11 at location 1"):
        reservations.reserve(11, 1, 1, holder="cart", ttl=60)
    with pytest.raises(UnknownPool):
        reservations.available(10, 2)
    with pytest.raises(UnknownPool):
        reservations.retire(11, 1, 1)
    with pytest.raises(InvalidReservation, match="item must be an integer id"):
        reservations.reserve("sku-1", 1, 1, holder="cart", ttl=60)
    assert Reservation.objects.count() == 0


def test_model_instances_stand_for_their_ids():
    pool = Pool.objects.create(item_id=99, location_id=1)  # any saved model: its pk is used
    reservations.restock(pool, 1, 1)
    assert reservations.available(pool.pk, 1) == 1


def test_restock_keeps_the_pool_within_its_cap():
    with override_settings(SKIPQUEUE_RESERVATION_POOL_CAP=10):
        reservations.restock(10, 1, 8)
        hold = reservations.reserve(10, 1, 3, holder="cart", ttl=60)
        before = counts()
        with pytest.raises(PoolFull, match="holds 8 units; adding 3 would pass its cap of 10"):
            reservations.restock(10, 1, 3)
        assert counts() == before
        reservations.confirm(hold)  # sold units leave the pool and make room
        assert reservations.restock(10, 1, 5) == 10
        with pytest.raises(InvalidReservation, match="from 1 to 10"):
            reservations.reserve(10, 1, 11, holder="cart", ttl=60)
    seqs = sorted(Unit.objects.values_list("unit_seq", flat=True))
    assert seqs == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "a sold unit's number is not reused"


def test_retire_takes_free_units_only():
    reservations.restock(10, 1, 3)
    reservations.reserve(10, 1, 2, holder="cart", ttl=60)
    with pytest.raises(InsufficientStock, match="2 to retire, 1 free"):
        reservations.retire(10, 1, 2)
    assert reservations.retire(10, 1, 1, reference="damaged") == 2
    assert reservations.available(10, 1) == 0
    assert not audit().problems


def test_an_expired_or_released_hold_cannot_be_confirmed():
    reservations.restock(10, 1, 3)
    late = reservations.reserve(10, 1, 1, holder="cart", ttl=0.05)
    gone = reservations.reserve(10, 1, 1, holder="cart", ttl=60)
    reservations.release(gone)
    import time

    time.sleep(0.1)
    with pytest.raises(HoldExpired):
        reservations.confirm(late)  # past its time, not swept yet
    assert release_expired() == 1
    with pytest.raises(HoldExpired):
        reservations.confirm(late)
    with pytest.raises(HoldNotActive, match="released"):
        reservations.confirm(gone)
    assert reservations.release(late).state == HoldState.EXPIRED  # already back: a no-op
    assert reservations.available(10, 1) == 3
    assert not audit().problems


def test_confirm_is_idempotent_and_a_sale_cannot_be_released():
    reservations.restock(10, 1, 2)
    hold = reservations.reserve(10, 1, 2, holder="cart", ttl=60)
    reservations.confirm(hold)
    assert reservations.confirm(hold.pk).state == HoldState.CONFIRMED
    with pytest.raises(HoldNotActive, match="confirmed"):
        reservations.release(hold)
    assert ledger().count(("sale", 0)) == 1
