"""manage.py skipqueue_scheduler: fire due schedules, in a loop or once."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from django_skipqueue.conf import get_settings
from django_skipqueue.management.arguments import positive_float
from django_skipqueue.management.daemons import database_ready, show_logs, turn
from django_skipqueue.management.database import require_migrated
from django_skipqueue.management.interrupts import stop_requested
from django_skipqueue.scheduling.definition import schedule_database
from django_skipqueue.scheduling.scheduler import Scheduler


class Command(BaseCommand):
    help = (
        "Enqueue the due ticks of recurring tasks. Every runworkers supervisor does it in its "
        "maintenance loop; this runs a scheduler apart. Safe to run on many hosts at once: "
        "each tick is enqueued exactly once."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--interval",
            type=positive_float,
            metavar="SECONDS",
            help="Seconds between two turns (default: SKIPQUEUE_SCHEDULER_INTERVAL).",
        )
        parser.add_argument(
            "--once", action="store_true", help="Run one turn, print the ticks enqueued, exit."
        )

    def execute(self, *args: Any, **options: Any) -> Any:
        """Wait for the database before the checks and the loop (--once: one line, exit 1)."""
        show_logs(options["verbosity"])
        if database_ready(schedule_database(), once=options["once"]):
            return super().execute(*args, **options)
        return None

    def handle(self, *args: Any, **options: Any) -> None:
        using = schedule_database()
        require_migrated(using, "django_skipqueue", "django_skipqueue.scheduling")
        scheduler = Scheduler(using)
        if options["once"]:
            self.stdout.write(f"ticks={scheduler.run_due()}")
            return
        interval = options["interval"] or get_settings().SCHEDULER_INTERVAL
        self.stdout.write(f"scheduling every {interval:g}s; Ctrl-C stops")
        with stop_requested() as stop:
            while not stop.is_set():
                turn(using, scheduler.run_due, "scheduler turn")
                stop.wait(interval)
        self.stdout.write("stopped")
