"""Ledger entries, written last in every pool transaction (see the lock order)."""

from __future__ import annotations

from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.reservations.models import LedgerEntry, Reservation
from django_skipqueue.reservations.states import LedgerReason


def record(
    using: str,
    pool: tuple[int, int],
    delta: int,
    reason: LedgerReason,
    reference: str = "",
    reservation_id: int | None = None,
) -> None:
    """Append one movement of a pool's free units."""
    LedgerEntry.objects.using(using).create(
        item_id=pool[0],
        location_id=pool[1],
        delta=delta,
        reason=reason,
        reference=reference,
        reservation_id=reservation_id,
        created_at=DatabaseNow(),
    )


def record_holds(using: str, holds: list[Reservation], reason: LedgerReason, sign: int) -> None:
    """Append one entry per hold, ``sign`` x its quantity, in one statement."""
    LedgerEntry.objects.using(using).bulk_create(
        LedgerEntry(
            item_id=hold.item_id,
            location_id=hold.location_id,
            delta=sign * hold.quantity,
            reason=reason,
            reference=hold.reference,
            reservation_id=hold.pk,
            created_at=DatabaseNow(),
        )
        for hold in holds
    )
