"""The scheduling app: recurring tasks, fired by the maintenance loop of every supervisor."""

from __future__ import annotations

from collections.abc import Callable

from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "django_skipqueue.scheduling"
    label = "skipqueue_scheduling"
    verbose_name = "Schedules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)

    def maintenance_steps(self, using: str) -> list[tuple[str, float, Callable[[], object]]]:
        """Steps the queue's maintenance loop runs for this app: the scheduler, the tick prune."""
        from ..conf import get_settings
        from .definition import schedule_database
        from .prune import prune_ticks
        from .scheduler import Scheduler

        if using != schedule_database():
            return []
        config, scheduler = get_settings(), Scheduler(using)
        return [
            ("schedule", config.SCHEDULER_INTERVAL, scheduler.run_due),
            ("prune_ticks", config.PRUNE_INTERVAL, lambda: prune_ticks(using)),
        ]
