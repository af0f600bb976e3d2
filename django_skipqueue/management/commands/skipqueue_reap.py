"""manage.py skipqueue_reap: reclaim expired leases and promote due jobs, once or in a loop."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from django_skipqueue.maintenance.loop import Maintenance
from django_skipqueue.maintenance.promote import promote
from django_skipqueue.maintenance.reap import reap
from django_skipqueue.management.arguments import add_backend, backend_named, positive_float
from django_skipqueue.management.database import explained, wait_or_explain
from django_skipqueue.management.interrupts import stop_requested


class Command(BaseCommand):
    help = (
        "Give jobs whose lease expired back to the queue (or fail them when their attempts "
        "are spent) and make due scheduled jobs ready. Safe to run from many hosts at once."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--interval",
            type=positive_float,
            metavar="SECONDS",
            help="Loop, reaping every SECONDS, until SIGINT/SIGTERM (default: run once).",
        )
        add_backend(parser, "Task backend whose queue database to maintain")
        parser.add_argument(
            "--json", action="store_true", help="Print the result of a single pass as JSON."
        )

    def execute(self, *args: Any, **options: Any) -> Any:
        """A database that cannot be used: one line (a pass), or a wait for it (a loop)."""
        using = backend_named(options["backend"]).database
        if options["interval"]:
            wait_or_explain(using)
            return super().execute(*args, **options)
        with explained(using):
            return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        using = backend_named(options["backend"]).database
        if options["interval"]:
            self._loop(using, options["interval"])
            return
        promoted = promote(using)
        result = reap(using)
        figures = {**result.as_dict(), "promoted": promoted}
        if options["json"]:
            self.stdout.write(json.dumps(figures))
        else:
            self.stdout.write(" ".join(f"{key}={value}" for key, value in figures.items()))

    def _loop(self, using: str, interval: float) -> None:
        maintenance = Maintenance(
            using, reap_interval=interval, promote_interval=min(interval, 1.0), purge_interval=0
        )
        self.stdout.write(f"reaping database={using} every {interval:g}s; Ctrl-C stops")
        with stop_requested() as stop:
            maintenance.run(stop)
        self.stdout.write("stopped")
