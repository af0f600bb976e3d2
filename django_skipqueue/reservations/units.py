"""The claim, the pool's only locking read, and the units of one hold.

The claim's shape is fixed: equalities on the primary key's leading columns, ``ORDER BY
unit_seq`` (the key's next column, so no sort), ``LIMIT n``, ``FOR UPDATE SKIP LOCKED``. It
walks at most the pool's own rows (the cap bounds them) and locks only the units it returns.
"""

from __future__ import annotations

from django.db.models import QuerySet

from django_skipqueue.reservations import compiled
from django_skipqueue.reservations.models import Reservation, Unit
from django_skipqueue.reservations.pools import free_units, pool_units

__all__ = ["claim", "free_units", "hold_units", "pool_units"]


def claim(using: str, pool: tuple[int, int], quantity: int) -> list[int]:
    """Lock up to ``quantity`` free units of the pool, skipping locked ones; return their seqs."""
    seqs = compiled.claim(using, pool, quantity)
    if seqs is not None:
        return seqs
    locked = free_units(using, pool).select_for_update(skip_locked=True)
    return list(locked.values_list("unit_seq", flat=True)[:quantity])


def hold_units(using: str, hold: Reservation) -> QuerySet[Unit]:
    """Return the units still held by ``hold``, found by primary key."""
    units = pool_units(using, (hold.item_id, hold.location_id))
    return units.filter(unit_seq__in=hold.unit_seqs, reserved_by=hold.pk)
