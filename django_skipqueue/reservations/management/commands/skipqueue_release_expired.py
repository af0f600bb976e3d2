"""manage.py skipqueue_release_expired: give expired holds' units back, once or in a loop."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections

from django_skipqueue.management.arguments import positive_float, positive_int
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
                close_old_connections()
                try:
                    self.stdout.write(f"released={sweep()}")
                except DatabaseError as error:
                    self.stderr.write(f"sweep failed, retrying at the next turn: {error}")
                stop.wait(options["interval"])
        self.stdout.write("stopped")
