"""manage.py skipqueue_release_expired: give expired holds' units back, once or in a loop."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from django_skipqueue.management.arguments import positive_float, positive_int
from django_skipqueue.management.daemons import database_ready, show_logs, turn
from django_skipqueue.management.database import require_migrated
from django_skipqueue.management.interrupts import stop_requested
from django_skipqueue.reservations.sweep import release_expired
from django_skipqueue.reservations.transactions import pool_database


class Command(BaseCommand):
    help = (
        "Return the units of expired reservation holds to their pools, with a ledger entry "
        "each. runworkers does it in its maintenance loop; this is for cron. Safe to run from "
        "many hosts at once."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--interval",
            type=positive_float,
            metavar="SECONDS",
            help="Loop, sweeping every SECONDS, until SIGINT/SIGTERM (default: run once).",
        )
        parser.add_argument(
            "--batch",
            type=positive_int,
            help="Holds per transaction (default: SKIPQUEUE_MAINTENANCE_BATCH).",
        )
        parser.add_argument(
            "--database",
            help="Database alias of the pools (default: SKIPQUEUE_RESERVATION_DATABASE).",
        )

    def execute(self, *args: Any, **options: Any) -> Any:
        """Wait for the database before the checks and the loop (one pass: one line, exit 1)."""
        show_logs(options["verbosity"])
        using = options["database"] or pool_database()
        if database_ready(using, once=not options["interval"]):
            return super().execute(*args, **options)
        return None

    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"] or pool_database()
        require_migrated(using, "django_skipqueue.reservations")

        def sweep() -> int:
            return release_expired(using, batch=options["batch"])

        if not options["interval"]:
            self.stdout.write(f"released={sweep()}")
            return
        self.stdout.write(f"sweeping every {options['interval']:g}s; Ctrl-C stops")
        with stop_requested() as stop:
            while not stop.is_set():
                released = turn(using, sweep, "sweep")
                if released is not None:
                    self.stdout.write(f"released={released}")
                stop.wait(options["interval"])
        self.stdout.write("stopped")
