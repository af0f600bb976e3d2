"""The sweep: expired holds give their units back, fenced against a confirm at the same instant.

Both lock the reservation row first. A confirm that holds it is skipped (SKIP LOCKED) and,
once committed, no longer matches ``state = held``; a confirm that waits for the sweep's lock
then reads ``expired`` and raises ``HoldExpired``. Never both.
"""

from __future__ import annotations

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.reservations.holds import return_units
from django_skipqueue.reservations.models import Reservation
from django_skipqueue.reservations.states import HoldState
from django_skipqueue.reservations.transactions import in_pool_transaction, pool_database


def release_expired(using: str | None = None, *, batch: int | None = None) -> int:
    """Expire every hold past its time, ``batch`` per transaction; return how many."""
    alias = using or pool_database()
    size = batch or get_settings().MAINTENANCE_BATCH
    swept = 0
    while True:
        done = in_pool_transaction(lambda: _sweep_batch(alias, size), alias)
        swept += done
        if done < size:
            return swept


def _sweep_batch(using: str, batch: int) -> int:
    expired = Reservation.objects.using(using).filter(
        state=HoldState.HELD, expires_at__lte=DatabaseNow()
    )
    holds = list(expired.order_by("expires_at").select_for_update(skip_locked=True)[:batch])
    if holds:
        return_units(using, holds, HoldState.EXPIRED)
    return len(holds)
