"""The reservations app: pools of units held with SKIP LOCKED, installed next to the queue.

Its ``Extension`` hooks add the sweep of expired holds to the maintenance loop and the units'
gauges to the Prometheus view.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.apps import AppConfig

from django_skipqueue.extensions import Extension, MaintenanceStep


class ReservationsConfig(Extension, AppConfig):
    name = "django_skipqueue.reservations"
    label = "skipqueue_reservations"
    verbose_name = "Reservations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_skipqueue.reservations import checks  # noqa: F401  (registers the system checks)

    def maintenance_steps(self, using: str) -> list[MaintenanceStep]:
        """Steps the queue's maintenance loop runs for this app: the sweep of expired holds."""
        from django_skipqueue.conf import get_settings
        from django_skipqueue.reservations.sweep import release_expired

        config = get_settings()
        if using != config.RESERVATION_DATABASE:
            return []
        return [
            MaintenanceStep("release_expired", config.RESERVATION_SWEEP_INTERVAL, release_expired)
        ]

    def metrics(self, using: str) -> Iterable[Any]:
        """The pools' gauges (read on SKIPQUEUE_RESERVATION_DATABASE, whatever ``using``)."""
        from django_skipqueue.reservations.extension import metrics

        return metrics()

    def databases(self) -> set[str]:
        from django_skipqueue.conf import get_settings

        return {get_settings().RESERVATION_DATABASE}
