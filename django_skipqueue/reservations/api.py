"""The public API of reservation pools; every call is one transaction (see ``transactions``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django_skipqueue.exceptions import InvalidReservation
from django_skipqueue.reservations import holds, inputs, stock
from django_skipqueue.reservations.models import Reservation
from django_skipqueue.reservations.transactions import in_pool_transaction, pool_database


def reserve(
    item: Any,
    location: Any,
    quantity: int,
    *,
    holder: str,
    ttl: float | timedelta,
    reference: str = "",
) -> Reservation:
    """Hold ``quantity`` units for ``ttl`` seconds, or raise ``InsufficientStock`` holding none."""
    pool = inputs.pool_key(item, location)
    count = inputs.quantity(quantity)
    seconds = inputs.ttl_seconds(ttl)
    who = inputs.label(holder, "holder", required=True)
    ref = inputs.label(reference, "reference", required=False)
    using = pool_database()
    return in_pool_transaction(lambda: holds.hold(using, pool, count, who, seconds, ref), using)


def confirm(reservation: Reservation | int) -> Reservation:
    """Sell a live hold's units; raise ``HoldExpired`` or ``HoldNotActive`` if it is not live."""
    using, pk = pool_database(), _pk(reservation)
    return in_pool_transaction(lambda: holds.confirm(using, pk), using)


def release(reservation: Reservation | int) -> Reservation:
    """Give a hold's units back to its pool (at once, without waiting for its expiry)."""
    using, pk = pool_database(), _pk(reservation)
    return in_pool_transaction(lambda: holds.release(using, pk), using)


def restock(item: Any, location: Any, quantity: int, *, reference: str = "") -> int:
    """Add free units to a pool, creating it; raise ``PoolFull`` past the cap."""
    pool, count = inputs.pool_key(item, location), inputs.quantity(quantity)
    ref, using = inputs.label(reference, "reference", required=False), pool_database()
    return in_pool_transaction(lambda: stock.restock(using, pool, count, ref), using)


def retire(item: Any, location: Any, quantity: int, *, reference: str = "") -> int:
    """Take free units out of a pool (damaged, counted short); return the units left."""
    pool, count = inputs.pool_key(item, location), inputs.quantity(quantity)
    ref, using = inputs.label(reference, "reference", required=False), pool_database()
    return in_pool_transaction(lambda: stock.retire(using, pool, count, ref), using)


def available(item: Any, location: Any) -> int:
    """Return the pool's free units now: exact when read, cheap enough for a product page."""
    return stock.available(pool_database(), inputs.pool_key(item, location))


def _pk(reservation: Reservation | int) -> int:
    pk = getattr(reservation, "pk", reservation)
    if isinstance(pk, bool) or not isinstance(pk, int):
        raise InvalidReservation(f"not a reservation or its id: {reservation!r}")
    return pk
