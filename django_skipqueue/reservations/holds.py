"""Hold, confirm and release units: each one transaction with its ledger entry."""

from __future__ import annotations

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_skipqueue.exceptions import HoldExpired, HoldNotActive, InsufficientStock, UnknownPool
from django_skipqueue.reservations import compiled, ledger
from django_skipqueue.reservations.models import Pool, Reservation
from django_skipqueue.reservations.shortage import claim_or_wait, committed_free
from django_skipqueue.reservations.states import (
    ENDING_REASONS,
    RETURNING_STATES,
    HoldState,
    LedgerReason,
)
from django_skipqueue.reservations.units import hold_units


def hold(
    using: str, pool: tuple[int, int], quantity: int, holder: str, ttl: float, reference: str
) -> Reservation:
    """Claim ``quantity`` free units for a new reservation, or raise and hold nothing.

    Its statements are compiled once (``compiled``); the order is the lock order: the new
    reservation, then the units, then the reservation again (its unit numbers), the ledger.
    """
    reservation = compiled.insert_hold(using, pool, quantity, holder, ttl, reference)
    if reservation is None:  # no INSERT ... RETURNING (MySQL)
        reservation = Reservation.objects.using(using).create(
            item_id=pool[0],
            location_id=pool[1],
            holder=holder,
            reference=reference,
            quantity=quantity,
            created_at=DatabaseNow(),
            expires_at=DatabaseNowPlus(ttl),
        )
    seqs = claim_or_wait(using, pool, quantity)
    if len(seqs) < quantity:
        raise _shortage(using, pool, quantity, len(seqs))
    reservation.unit_seqs = seqs
    compiled.mark_units(using, pool, seqs, reservation.pk, ttl)
    compiled.set_unit_seqs(using, reservation.pk, seqs)
    compiled.record(using, pool, -quantity, LedgerReason.HOLD, reference, reservation.pk)
    return reservation


def _shortage(using: str, pool: tuple[int, int], wanted: int, found: int) -> Exception:
    if not found and not Pool.objects.using(using).filter(item_id=pool[0], location_id=pool[1]):
        return UnknownPool(f"no pool for item {pool[0]} at location {pool[1]}")
    return InsufficientStock(
        f"item {pool[0]} at location {pool[1]}: {wanted} asked, {found} free units claimable"
        + _locked_note(using, pool, wanted)
    )


def _locked_note(using: str, pool: tuple[int, int], wanted: int) -> str:
    """Say so when the refusal came after the wait: enough were free, but locked throughout."""
    if committed_free(using, pool, wanted) < wanted:
        return ""
    wait = get_settings().RESERVATION_LOCKED_WAIT
    return (
        f" (enough are free, but other transactions kept them locked for over {wait:g} s:"
        " SKIPQUEUE_RESERVATION_LOCKED_WAIT)"
    )


def confirm(using: str, reservation_id: int) -> Reservation:
    """Turn a live hold into a sale; a confirmed hold is returned as it is."""
    reservation = _locked(using, reservation_id)
    if reservation.state == HoldState.CONFIRMED:
        return reservation
    if reservation.state != HoldState.HELD:
        raise _not_active(reservation)
    if not reservation.live:  # type: ignore[attr-defined]
        raise HoldExpired(f"{reservation} expired at {reservation.expires_at}")
    _end(using, reservation, HoldState.CONFIRMED)
    sold = compiled.sell_units(using, reservation)
    if sold is None:
        sold = hold_units(using, reservation).delete()[0]
    if sold != reservation.quantity:
        raise HoldNotActive(f"{reservation} no longer holds all its units")
    reason = ENDING_REASONS[HoldState.CONFIRMED]
    compiled.record(using, _pool(reservation), 0, reason, reservation.reference, reservation.pk)
    return reservation


def release(using: str, reservation_id: int) -> Reservation:
    """Give a held reservation's units back; a released or expired one is returned as it is."""
    reservation = _locked(using, reservation_id)
    if reservation.state in RETURNING_STATES:
        return reservation
    if reservation.state != HoldState.HELD:
        raise _not_active(reservation)
    return_units(using, [reservation], HoldState.RELEASED)
    return reservation


def return_units(using: str, holds: list[Reservation], state: HoldState) -> None:
    """End locked, held reservations as ``state`` and free their units, with ledger entries."""
    for reservation in holds:
        _end(using, reservation, state)
    for reservation in holds:
        freed = hold_units(using, reservation).update(reserved_by=None, reserved_until=None)
        if freed != reservation.quantity:
            raise HoldNotActive(f"{reservation} no longer holds all its units")
    ledger.record_holds(using, holds, ENDING_REASONS[state], +1)


def _locked(using: str, reservation_id: int) -> Reservation:
    """Lock the reservation and read whether it is still within its time, by the db clock."""
    return compiled.lock_hold(using, reservation_id)


def _end(using: str, reservation: Reservation, state: HoldState) -> None:
    compiled.end_hold(using, reservation.pk, state)
    reservation.state = state


def _not_active(reservation: Reservation) -> HoldNotActive:
    if reservation.state == HoldState.EXPIRED:
        return HoldExpired(f"{reservation} expired and its units went back to the pool")
    return HoldNotActive(f"{reservation} is {reservation.state}, not held")


def _pool(reservation: Reservation) -> tuple[int, int]:
    return reservation.item_id, reservation.location_id
