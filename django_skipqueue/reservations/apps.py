"""The reservations app: pools of units held with SKIP LOCKED, installed next to the queue."""

from __future__ import annotations

from collections.abc import Callable

from django.apps import AppConfig


class ReservationsConfig(AppConfig):
    name = "django_skipqueue.reservations"
    label = "skipqueue_reservations"
    verbose_name = "Reservations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)

    def maintenance_steps(self, using: str) -> list[tuple[str, float, Callable[[], object]]]:
        """Steps the queue's maintenance loop runs for this app: the sweep of expired holds."""
        from ..conf import get_settings
        from .sweep import release_expired

        config = get_settings()
        if using != config.RESERVATION_DATABASE:
            return []
        return [("release_expired", config.RESERVATION_SWEEP_INTERVAL, release_expired)]
