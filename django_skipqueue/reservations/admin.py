"""Reservations in the admin: pools with their counts, holds, the ledger; release and restock.

Every figure of a pool row reads that pool's units only (at most the cap) and its registry row:
nothing counts the history of holds or the ledger. Actions go through the public API, so they
take the same locks, ledger entries and checks as the application's own calls.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Min, Q, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from django_skipqueue.admin import cells
from django_skipqueue.admin.detail import moment
from django_skipqueue.admin.readonly import ReadOnlyAdmin
from django_skipqueue.exceptions import ReservationError
from django_skipqueue.reservations import api
from django_skipqueue.reservations.models import LedgerEntry, Pool, Reservation, Unit
from django_skipqueue.reservations.states import HoldState

#: Holds that run out within this long are "expiring soon".
SOON = timedelta(minutes=5)


class RestockForm(forms.Form):
    quantity = forms.IntegerField(min_value=1, help_text="Units to add to each selected pool.")
    reference = forms.CharField(max_length=200, required=False)


@admin.action(permissions=["restock"], description="Restock selected pools")
def restock(model_admin: PoolAdmin, request: HttpRequest, queryset: QuerySet) -> Any:
    """Ask for a quantity, then restock each pool in its own transaction."""
    form = RestockForm(request.POST if "apply" in request.POST else None)
    if not form.is_valid():
        context = {
            **model_admin.admin_site.each_context(request),
            "form": form,
            "pools": queryset,
            "opts": model_admin.model._meta,
            "title": "Restock pools",
        }
        return TemplateResponse(request, "admin/skipqueue_reservations/restock.html", context)
    for pool in queryset:
        try:
            size = api.restock(
                pool.item_id,
                pool.location_id,
                form.cleaned_data["quantity"],
                reference=form.cleaned_data["reference"],
            )
        except ReservationError as error:
            model_admin.message_user(request, str(error), messages.ERROR)
        else:
            model_admin.message_user(request, f"{pool}: restocked, {size} units in the pool.")
    return None


@admin.register(Pool)
class PoolAdmin(ReadOnlyAdmin):
    list_display = (
        "item_id",
        "location_id",
        "stock",
        "free",
        "held",
        "sold",
        "oldest_hold",
        "expiring_soon",
        "ledger",
    )
    search_fields = ("=item_id", "=location_id")
    ordering = ("item_id", "location_id")
    list_per_page = 50
    actions = [restock]

    def has_restock_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("skipqueue_reservations.restock_pool")

    def figures(self, pool: Pool) -> dict[str, Any]:
        """One read of the pool's units, shared by the row's columns."""
        if getattr(pool, "_figures", None) is None:
            soon = timezone.now() + SOON
            units = Unit.objects.using(pool._state.db).filter(
                item_id=pool.item_id, location_id=pool.location_id
            )
            pool._figures = units.aggregate(  # type: ignore[attr-defined]
                free=Count("pk", filter=Q(reserved_by__isnull=True)),
                held=Count("pk", filter=Q(reserved_by__isnull=False)),
                soon=Count("pk", filter=Q(reserved_until__lt=soon)),
                oldest=Min("reserved_by"),
            )
        return pool._figures  # type: ignore[attr-defined]

    @admin.display(description="free")
    def free(self, pool: Pool) -> int:
        return self.figures(pool)["free"]

    @admin.display(description="held")
    def held(self, pool: Pool) -> int:
        return self.figures(pool)["held"]

    @admin.display(description="sold")
    def sold(self, pool: Pool) -> int:
        return pool.stock - self.free(pool) - self.held(pool)

    @admin.display(description="oldest hold")
    def oldest_hold(self, pool: Pool) -> str:
        oldest = self.figures(pool)["oldest"]  # ids increase with time
        hold = Reservation.objects.using(pool._state.db).filter(pk=oldest).first()
        if hold is None:
            return "-"
        url = reverse("admin:skipqueue_reservations_reservation_change", args=[hold.pk])
        age = timezone.now() - hold.created_at
        return format_html(
            '<a href="{}">#{}</a>, {} s old', url, hold.pk, int(age.total_seconds())
        )

    @admin.display(description="units expiring in 5 min")
    def expiring_soon(self, pool: Pool) -> int:
        return self.figures(pool)["soon"]

    @admin.display(description="ledger")
    def ledger(self, pool: Pool) -> str:
        url = reverse("admin:skipqueue_reservations_ledgerentry_changelist")
        query = f"item_id={pool.item_id}&location_id={pool.location_id}"
        return format_html('<a href="{}?{}">entries</a>', url, query)


@admin.action(permissions=["release"], description="Release selected holds")
def release(model_admin: ReservationAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    """Give the units of held reservations back; other states are left alone."""
    released = skipped = 0
    for hold in queryset:
        if hold.state != HoldState.HELD:
            skipped += 1
            continue
        try:
            api.release(hold)
            released += 1
        except ReservationError as error:
            model_admin.message_user(request, f"{hold}: {error}", messages.ERROR)
    model_admin.message_user(request, f"{released} hold(s) released.")
    if skipped:
        model_admin.message_user(
            request,
            f"{skipped} reservation(s) left alone: only held ones are released.",
            messages.WARNING,
        )


class ExpiringFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiring"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("soon", "held, expiring within 5 min"), ("past", "held, past expiry")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        # Both use the sweep's (state, expires_at) index.
        held, now = queryset.filter(state=HoldState.HELD), timezone.now()
        if self.value() == "soon":
            return held.filter(expires_at__gte=now, expires_at__lt=now + SOON)
        if self.value() == "past":
            return held.filter(expires_at__lt=now)
        return queryset


@admin.register(Reservation)
class ReservationAdmin(ReadOnlyAdmin):
    list_display = ("id", "item", "location", "quantity", "state_cell", "holder_cell",
                    "reference_cell", "created", "expires")  # fmt: skip
    list_filter = ("state", ExpiringFilter)
    search_fields = ("=id", "=item_id", "=holder", "=reference")
    ordering = ("-id",)
    actions = [release]

    @admin.display(description="item", ordering="item_id")
    def item(self, hold: Reservation) -> int:
        return hold.item_id

    @admin.display(description="location", ordering="location_id")
    def location(self, hold: Reservation) -> int:
        return hold.location_id

    @admin.display(description="state", ordering="state")
    def state_cell(self, hold: Reservation) -> SafeString:
        """The state, and when a hold that ended did."""
        ended = f"{hold.state} {moment(hold.ended_at)}" if hold.ended_at else ""
        return cells.noted(hold.get_state_display(), ended)

    @admin.display(description="holder", ordering="holder")
    def holder_cell(self, hold: Reservation) -> SafeString:
        return cells.clipped(hold.holder, 24)

    @admin.display(description="reference")
    def reference_cell(self, hold: Reservation) -> SafeString:
        return cells.clipped(hold.reference, 24)

    @admin.display(description="created (UTC)", ordering="created_at")
    def created(self, hold: Reservation) -> SafeString:
        return cells.when(hold.created_at)

    @admin.display(description="expires (UTC)", ordering="expires_at")
    def expires(self, hold: Reservation) -> SafeString:
        return cells.when(hold.expires_at)

    def has_release_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("skipqueue_reservations.release_reservation")


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = ("id", "item_id", "location_id", "reason", "delta", "reference_cell",
                    "reservation_id", "created")  # fmt: skip
    list_filter = ("reason",)
    search_fields = ("=item_id", "=reference", "=reservation_id")
    ordering = ("-id",)

    @admin.display(description="reference")
    def reference_cell(self, entry: LedgerEntry) -> SafeString:
        return cells.clipped(entry.reference, 40)

    @admin.display(description="created (UTC)", ordering="created_at")
    def created(self, entry: LedgerEntry) -> SafeString:
        return cells.when(entry.created_at)

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # A pool's ledger, linked from the pool list.
        return lookup in ("item_id", "location_id") or super().lookup_allowed(
            lookup, value, request
        )
