"""The reservations' gauges for the Prometheus view (the reservations app's hook).

Called by ``ReservationsConfig.metrics``; the core never imports this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django_skipqueue.conf import get_settings


def metrics() -> Iterator[Any]:
    """Units free and held in every pool, each count capped."""
    from django_skipqueue.monitoring.prometheus import (
        gauge,  # prometheus-client: only when scraped
    )
    from django_skipqueue.reservations.models import Reservation, Unit
    from django_skipqueue.reservations.states import HoldState

    settings = get_settings()
    using, cap = settings.RESERVATION_DATABASE, settings.STATUS_COUNT_CAP
    units: Any = Unit.objects.using(using)
    free = units.filter(reserved_by__isnull=True).values("unit_seq")[: cap + 1].count()
    # A live hold marks exactly its quantity of units, in the same transaction: its rows are
    # read on the sweep's index (state, expires_at). Units have no index on reserved_by, and
    # counting the held ones would read every unit when few are held.
    holds = Reservation.objects.using(using).filter(state=HoldState.HELD)
    held = sum(holds.order_by().values_list("quantity", flat=True)[: cap + 1])
    yield gauge(
        "skipqueue_reservation_units",
        "Units in every reservation pool: free (counted up to SKIPQUEUE_STATUS_COUNT_CAP + 1), "
        "or held (by up to SKIPQUEUE_STATUS_COUNT_CAP + 1 live holds).",
        [(("free",), free), (("held",), held)],
        ["state"],
    )
