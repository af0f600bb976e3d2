"""Restock and retire: the only writers of a pool's registry row, each within the cap."""

from __future__ import annotations

from django.db.models import F

from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import InsufficientStock, PoolFull, UnknownPool
from django_skipqueue.reservations import ledger
from django_skipqueue.reservations.models import Pool, Unit
from django_skipqueue.reservations.shortage import claim_or_wait
from django_skipqueue.reservations.states import LedgerReason
from django_skipqueue.reservations.units import pool_units


def restock(using: str, pool: tuple[int, int], quantity: int, reference: str) -> int:
    """Add ``quantity`` free units (creating the pool); return the units now in the pool."""
    registry = _locked_pool(using, pool, create=True)
    size = pool_units(using, pool).count()
    cap = get_settings().RESERVATION_POOL_CAP
    if size + quantity > cap:
        raise PoolFull(
            f"item {pool[0]} at location {pool[1]} holds {size} units; adding {quantity} "
            f"would pass its cap of {cap} (SKIPQUEUE_RESERVATION_POOL_CAP)"
        )
    first = registry.next_seq
    Unit.objects.using(using).bulk_create(
        Unit(item_id=pool[0], location_id=pool[1], unit_seq=seq)
        for seq in range(first, first + quantity)
    )
    Pool.objects.using(using).filter(pk=registry.pk).update(
        next_seq=first + quantity, stock=F("stock") + quantity
    )
    ledger.record(using, pool, quantity, LedgerReason.RESTOCK, reference)
    return size + quantity


def retire(using: str, pool: tuple[int, int], quantity: int, reference: str) -> int:
    """Take ``quantity`` free units out of the pool; return the units left in it."""
    registry = _locked_pool(using, pool, create=False)
    seqs = claim_or_wait(using, pool, quantity)
    if len(seqs) < quantity:
        raise InsufficientStock(
            f"item {pool[0]} at location {pool[1]}: {quantity} to retire, "
            f"{len(seqs)} free units claimable"
        )
    pool_units(using, pool).filter(unit_seq__in=seqs).delete()
    Pool.objects.using(using).filter(pk=registry.pk).update(stock=F("stock") - quantity)
    ledger.record(using, pool, -quantity, LedgerReason.RETIRE, reference)
    return pool_units(using, pool).count()


def available(using: str, pool: tuple[int, int]) -> int:
    """Count the pool's free units: a plain read of at most the cap's rows, no lock."""
    free = pool_units(using, pool).filter(reserved_by__isnull=True).count()
    if not free and not _exists(using, pool):
        raise UnknownPool(f"no pool for item {pool[0]} at location {pool[1]}")
    return free


def _locked_pool(using: str, pool: tuple[int, int], *, create: bool) -> Pool:
    rows = Pool.objects.using(using).select_for_update()
    if create:
        registry, _ = rows.get_or_create(item_id=pool[0], location_id=pool[1])
        return registry
    try:
        return rows.get(item_id=pool[0], location_id=pool[1])
    except Pool.DoesNotExist:
        raise UnknownPool(f"no pool for item {pool[0]} at location {pool[1]}") from None


def _exists(using: str, pool: tuple[int, int]) -> bool:
    return Pool.objects.using(using).filter(item_id=pool[0], location_id=pool[1]).exists()
