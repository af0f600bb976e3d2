"""The units of a pool as querysets: all of them, and the free ones in the claim's order.

Below both the claim (``units.py``) and its compiled statement (``compiled.py``), which build
on the same queryset so that they run the same SQL.
"""

from __future__ import annotations

from django.db.models import QuerySet

from django_skipqueue.reservations.models import Unit


def pool_units(using: str, pool: tuple[int, int]) -> QuerySet[Unit]:
    """Return every unit of one pool, free or held."""
    return Unit.objects.using(using).filter(item_id=pool[0], location_id=pool[1])


def free_units(using: str, pool: tuple[int, int]) -> QuerySet[Unit]:
    """Return the pool's free units in the claim's order (its key's)."""
    return pool_units(using, pool).filter(reserved_by__isnull=True).order_by("unit_seq")
