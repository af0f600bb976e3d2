"""The scheduling app: recurring tasks, fired by the maintenance loop of every supervisor.

Its ``Extension`` hooks add the scheduler to the maintenance loop, the schedules to
``skipqueue_status`` and the dashboard, and the overdue check to ``skipqueue_health``.
"""

from __future__ import annotations

from django.apps import AppConfig

from django_skipqueue.extensions import (
    Extension,
    HealthCheck,
    MaintenanceStep,
    Panel,
    StatusSection,
)


class SchedulingConfig(Extension, AppConfig):
    name = "django_skipqueue.scheduling"
    label = "skipqueue_scheduling"
    verbose_name = "Schedules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_skipqueue.scheduling import checks  # noqa: F401  (registers the system checks)

    def maintenance_steps(self, using: str) -> list[MaintenanceStep]:
        """Steps the queue's maintenance loop runs for this app: the scheduler, the tick prune."""
        from django_skipqueue.conf import get_settings
        from django_skipqueue.scheduling.definition import schedule_database
        from django_skipqueue.scheduling.prune import prune_ticks
        from django_skipqueue.scheduling.scheduler import Scheduler

        if using != schedule_database():
            return []
        config, scheduler = get_settings(), Scheduler(using)
        return [
            MaintenanceStep("schedule", config.SCHEDULER_INTERVAL, scheduler.run_due),
            MaintenanceStep("prune_ticks", config.PRUNE_INTERVAL, lambda: prune_ticks(using)),
        ]

    def status_sections(self, using: str) -> list[StatusSection]:
        from django_skipqueue.scheduling.extension import status_sections

        return status_sections(using)

    def health_checks(self) -> list[HealthCheck]:
        from django_skipqueue.scheduling.extension import health_checks

        return health_checks()

    def dashboard_panels(self, using: str) -> list[Panel]:
        from django_skipqueue.scheduling.extension import dashboard_panels

        return dashboard_panels(using)
