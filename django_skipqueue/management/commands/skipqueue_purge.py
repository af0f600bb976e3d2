"""manage.py skipqueue_purge: delete (or archive) old finished jobs in small chunks."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_skipqueue.maintenance.purge import Purge
from django_skipqueue.maintenance.purge_options import PurgeOptions
from django_skipqueue.maintenance.replicas import NotAReplica, check_replicas
from django_skipqueue.management.arguments import (
    add_backend,
    backend_named,
    duration,
    non_negative_float,
    positive_int,
    values_of,
)
from django_skipqueue.management.database import explained
from django_skipqueue.management.interrupts import stop_requested
from django_skipqueue.management.progress import TerminalReporter
from django_skipqueue.models import FINISHED_STATUSES

#: Exit status when the purge was interrupted (after its last complete chunk).
INTERRUPTED = 130


class Command(BaseCommand):
    help = (
        "Delete finished jobs older than a retention, in primary-key chunks of one short "
        "transaction each, pausing while a replica lags. Without --older-than each status "
        "keeps SKIPQUEUE_PURGE_RETENTION."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--older-than",
            type=duration,
            metavar="AGE",
            help="Purge jobs finished more than AGE ago (7d, 12h, 90m, 30s).",
        )
        parser.add_argument(
            "--status",
            nargs="+",
            choices=values_of(FINISHED_STATUSES),
            metavar="STATUS",
            help="Finished statuses to purge: %(choices)s (default: all with a retention).",
        )
        parser.add_argument(
            "--chunk",
            type=positive_int,
            metavar="ROWS",
            help="Most rows per transaction (default: SKIPQUEUE_PURGE_CHUNK).",
        )
        parser.add_argument(
            "--sleep",
            type=non_negative_float,
            metavar="SECONDS",
            help="Pause between chunks (default: SKIPQUEUE_PURGE_SLEEP).",
        )
        parser.add_argument(
            "--max-replica-lag",
            type=non_negative_float,
            metavar="SECONDS",
            help="Pause while a replica is further behind than this "
            "(default: SKIPQUEUE_PURGE_MAX_REPLICA_LAG).",
        )
        parser.add_argument(
            "--replica",
            nargs="+",
            action="extend",
            metavar="ALIAS",
            help="Database alias of a replica to watch; repeatable "
            "(default: SKIPQUEUE_PURGE_REPLICAS).",
        )
        parser.add_argument(
            "--archive",
            action="store_true",
            default=None,
            help="Copy each purged job into the history table first, in the same transaction.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be purged; change nothing."
        )
        add_backend(parser, "Task backend whose jobs to purge")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def execute(self, *args: Any, **options: Any) -> Any:
        """A database that cannot be used: one line, exit status 1 (management/database.py)."""
        with explained(backend_named(options["backend"]).database):
            return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        purge = Purge(self._options(options), reporter=TerminalReporter(self.stdout))
        if not purge.options.retention:
            raise CommandError("Nothing to purge: no status has a retention.")
        with stop_requested() as stop:
            purge.should_stop = stop.is_set
            purge.run()
        summary = purge.summary
        if options["json"]:
            self.stdout.write(json.dumps(summary.as_dict()))
        else:
            self.stdout.write(summary.describe())
        if summary.interrupted:
            message = "Interrupted after the last complete chunk."
            raise CommandError(message, returncode=INTERRUPTED)

    def _options(self, options: dict[str, Any]) -> PurgeOptions:
        using = backend_named(options["backend"]).database
        try:
            config = PurgeOptions.from_settings(
                using=using,
                statuses=options["status"],
                older_than=options["older_than"],
                chunk=options["chunk"],
                sleep=options["sleep"],
                replicas=options["replica"],
                max_replica_lag=options["max_replica_lag"],
                archive=options["archive"],
                dry_run=options["dry_run"] or None,
            )
            check_replicas(config.replicas)
        except (ValueError, NotAReplica) as error:
            raise CommandError(str(error)) from error
        return config
