"""manage.py skipqueue_purge: delete (or archive) old finished jobs in small chunks."""

from __future__ import annotations

import json
from argparse import ArgumentParser, ArgumentTypeError
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_skipqueue.durations import parse_duration
from django_skipqueue.management.progress import TerminalReporter
from django_skipqueue.management.stopping import stop_requested
from django_skipqueue.models import FINISHED_STATUSES
from django_skipqueue.purge import Purge
from django_skipqueue.queues import queue_database
from django_skipqueue.replicas import NotAReplica, check_replicas
from django_skipqueue.retention import PurgeOptions

#: Exit status when the purge was interrupted (after its last complete chunk).
INTERRUPTED = 130


def duration(value: str) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as error:
        raise ArgumentTypeError(str(error)) from error


def positive(kind: type[int] | type[float]) -> Any:
    def parse(value: str) -> int | float:
        number = kind(value)
        if number < 0 or (kind is int and number == 0):
            raise ArgumentTypeError(f"{value!r} must be a positive number.")
        return number

    parse.__name__ = kind.__name__
    return parse


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
            choices=FINISHED_STATUSES,
            help="Finished statuses to purge (default: all with a retention).",
        )
        parser.add_argument(
            "--chunk",
            type=positive(int),
            metavar="ROWS",
            help="Most rows per transaction (default: SKIPQUEUE_PURGE_CHUNK).",
        )
        parser.add_argument(
            "--sleep",
            type=positive(float),
            metavar="SECONDS",
            help="Pause between chunks (default: SKIPQUEUE_PURGE_SLEEP).",
        )
        parser.add_argument(
            "--max-replica-lag",
            type=positive(float),
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
        parser.add_argument(
            "--backend",
            default="default",
            help="Task backend whose jobs to purge (default: %(default)r).",
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

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
        try:
            config = PurgeOptions.from_settings(
                using=queue_database(options["backend"]),
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
