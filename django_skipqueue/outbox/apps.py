from __future__ import annotations

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "django_skipqueue.outbox"
    label = "skipqueue_outbox"
    verbose_name = "Outbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
