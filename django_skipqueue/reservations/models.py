"""Pools of units, one row per sellable unit, the holds on them and the append-only ledger.

A project keeps its own products and locations: ``item_id`` and ``location_id`` are plain
integers (usually their primary keys), so the pool tables need no foreign key and no join.
"""

from __future__ import annotations

from django.db import models

from django_skipqueue.reservations.states import HoldState, LedgerReason

__all__ = ["HoldState", "LedgerEntry", "LedgerReason", "Pool", "Reservation", "Unit"]

#: Explicit: were the app left out of INSTALLED_APPS, its models would join
#: django_skipqueue (the package around them) and name tables no migration creates.
APP_LABEL = "skipqueue_reservations"


class Pool(models.Model):
    """The registry of one item at one location: written by restock and retire only.

    Reservations never touch this row, so it is not a hot spot; restocks and retirements of one
    pool lock it and so take turns. ``next_seq`` numbers new units: a sold unit's number is never
    given to another unit. ``stock`` counts units restocked minus units retired, so the units
    sold are ``stock`` minus those still in the pool, with no count of the history.
    """

    item_id = models.BigIntegerField()
    location_id = models.BigIntegerField()
    next_seq = models.PositiveIntegerField(default=1)
    stock = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = APP_LABEL
        permissions = [("restock_pool", "Can restock a pool")]
        constraints = [
            models.UniqueConstraint(
                fields=["item_id", "location_id"], name="skipqueue_pool_item_location"
            )
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} at location {self.location_id}"


class Unit(models.Model):
    """One sellable unit of a pool: free (``reserved_by`` is NULL) or held by a reservation.

    The primary key leads with the claim's equality columns, so the claim walks the pool's own
    range of the clustered index and takes one row lock per unit, with no secondary index to
    lock as well. A sold unit leaves the pool: its reservation keeps its number.
    """

    pk = models.CompositePrimaryKey("item_id", "location_id", "unit_seq")
    item_id = models.BigIntegerField()
    location_id = models.BigIntegerField()
    unit_seq = models.PositiveIntegerField()
    reserved_by = models.BigIntegerField(null=True, blank=True)
    reserved_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = APP_LABEL

    def __str__(self) -> str:
        return f"unit {self.unit_seq} of item {self.item_id} at location {self.location_id}"


class Reservation(models.Model):
    """One hold on ``quantity`` units of a pool, and how it ended."""

    item_id = models.BigIntegerField()
    location_id = models.BigIntegerField()
    holder = models.CharField(max_length=200)
    reference = models.CharField(max_length=200, blank=True)
    quantity = models.PositiveIntegerField()
    unit_seqs = models.JSONField(default=list)
    state = models.CharField(max_length=9, choices=HoldState, default=HoldState.HELD)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = APP_LABEL
        # The sweep's only query: held, ordered by expiry.
        indexes = [models.Index(fields=["state", "expires_at"], name="skipqueue_resv_expiry")]
        permissions = [("release_reservation", "Can release a hold")]

    def __str__(self) -> str:
        return f"reservation {self.pk} of {self.quantity} x item {self.item_id} ({self.state})"


class LedgerEntry(models.Model):
    """One movement of a pool's available (free) units; rows are only ever inserted.

    The sum of ``delta`` over a pool is its number of free units. A sale moves no free unit (its
    hold already did), so its entry has delta 0 and records that the hold became a sale.
    """

    item_id = models.BigIntegerField()
    location_id = models.BigIntegerField()
    delta = models.IntegerField()
    reason = models.CharField(max_length=7, choices=LedgerReason)
    reference = models.CharField(max_length=200, blank=True)
    reservation_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        app_label = APP_LABEL
        verbose_name_plural = "ledger entries"
        indexes = [
            models.Index(fields=["item_id", "location_id", "id"], name="skipqueue_ledger_pool")
        ]

    def __str__(self) -> str:
        return f"{self.reason} {self.delta:+d} item {self.item_id} at {self.location_id}"
