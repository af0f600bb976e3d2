"""The outbox app: messages written in the business transaction, published by relays.

Its ``Extension`` hooks (``extension.py``) add its line to ``skipqueue_status``, its lag check to
``skipqueue_health``, its gauges, its dashboard section and ``runworkers --relay``.
"""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Iterable, Mapping
from typing import Any

from django.apps import AppConfig
from django.db import DEFAULT_DB_ALIAS

from django_skipqueue.extensions import Extension, HealthCheck, Panel, SideProcess, StatusSection


class OutboxConfig(Extension, AppConfig):
    name = "django_skipqueue.outbox"
    label = "skipqueue_outbox"
    verbose_name = "Outbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_skipqueue.outbox import checks  # noqa: F401  (registers the system checks)

    def status_sections(self, using: str) -> list[StatusSection]:
        from django_skipqueue.outbox.extension import status_sections

        return status_sections(using)

    def health_checks(self) -> list[HealthCheck]:
        from django_skipqueue.outbox.extension import health_checks

        return health_checks()

    def metrics(self, using: str) -> Iterable[Any]:
        from django_skipqueue.outbox.extension import metrics

        return metrics(using)

    def dashboard_panels(self, using: str) -> list[Panel]:
        from django_skipqueue.outbox.extension import dashboard_panels

        return dashboard_panels(using)

    def runworkers_arguments(self, parser: ArgumentParser) -> None:
        from django_skipqueue.outbox.extension import runworkers_arguments

        runworkers_arguments(parser)

    def side_processes(self, options: Mapping[str, Any]) -> list[SideProcess]:
        from django_skipqueue.outbox.extension import side_processes

        return side_processes(options)

    def databases(self) -> set[str]:
        """``publish()``'s and the relay's default database."""
        return {DEFAULT_DB_ALIAS}
