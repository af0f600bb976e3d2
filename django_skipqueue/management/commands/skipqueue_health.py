"""manage.py skipqueue_health: exit 0 when the queue is healthy, else a status per problem."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from django_skipqueue.conf import get_settings
from django_skipqueue.management.arguments import (
    accept_skip_checks,
    add_backend,
    backend_named,
    positive_float,
    positive_int,
)
from django_skipqueue.monitoring.dbhealth import DatabaseHealth, database_health
from django_skipqueue.monitoring.health import (
    Problem,
    Thresholds,
    Unhealthy,
    database_problems,
    problems,
    summary,
)
from django_skipqueue.monitoring.stats import queue_status
from django_skipqueue.outbox.stats import lag_problem, outbox_status
from django_skipqueue.scheduling.status import overdue_problem


class Command(BaseCommand):
    help = (
        "Check the queue for orchestrators. Exit status: 0 healthy, 3 no live worker, "
        "4 a ready job waited too long, 5 the reaper is not running, 6 an outbox message "
        "waited too long (with the outbox app), 7 the InnoDB history list is too long, "
        "8 a transaction on the server is too old (7 and 8 when their limits are set), "
        "9 a schedule's tick is overdue (with the scheduling app), 1 cannot check; "
        "with several problems, the first of these. Each problem is printed."
    )
    # No system checks: they may need the database, and an unreachable database must end in
    # "UNHEALTHY" and exit status 1, not in a traceback.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--max-ready-age",
            type=positive_float,
            metavar="SECONDS",
            help="Longest acceptable wait of a ready job "
            "(default: SKIPQUEUE_HEALTH_MAX_READY_AGE).",
        )
        parser.add_argument(
            "--max-reaper-age",
            type=positive_float,
            metavar="SECONDS",
            help="Longest acceptable time since the last reaper pass "
            "(default: SKIPQUEUE_HEALTH_MAX_REAPER_AGE).",
        )
        parser.add_argument(
            "--max-outbox-age",
            type=positive_float,
            metavar="SECONDS",
            help="Longest acceptable wait of an unsent outbox message "
            "(default: SKIPQUEUE_HEALTH_MAX_OUTBOX_AGE).",
        )
        parser.add_argument(
            "--max-history-length",
            type=positive_int,
            metavar="N",
            help="Longest acceptable InnoDB history list "
            "(default: SKIPQUEUE_HEALTH_MAX_HISTORY_LENGTH; none: not checked).",
        )
        parser.add_argument(
            "--max-transaction-age",
            type=positive_float,
            metavar="SECONDS",
            help="Longest acceptable age of an open transaction on the server "
            "(default: SKIPQUEUE_HEALTH_MAX_TRANSACTION_AGE; none: not checked).",
        )
        parser.add_argument(
            "--max-schedule-lag",
            type=positive_float,
            metavar="SECONDS",
            help="Longest acceptable delay of an enabled schedule's next tick "
            "(default: SKIPQUEUE_HEALTH_MAX_SCHEDULE_LAG).",
        )
        add_backend(parser, "Task backend to check")
        parser.add_argument("--json", action="store_true", help="Print the verdict as JSON.")
        accept_skip_checks(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        thresholds = Thresholds.from_settings(options["max_ready_age"], options["max_reaper_age"])
        try:
            backend = backend_named(options["backend"])
            report = queue_status(backend.database, backend.queue_names, window_minutes=1)
            outbox = outbox_status(backend.database)
            server = self._server(options, backend.database)
            lag = options["max_schedule_lag"] or get_settings().HEALTH_MAX_SCHEDULE_LAG
            overdue = overdue_problem(backend.database, lag)
        except (CommandError, DatabaseError, ValueError) as error:
            raise CommandError(f"UNHEALTHY: cannot check the queue: {error}") from error
        found = problems(report, thresholds)
        limit = options["max_outbox_age"] or get_settings().HEALTH_MAX_OUTBOX_AGE
        if lag := lag_problem(outbox, limit):
            found.append(Problem(Unhealthy.OUTBOX_TOO_OLD, lag))
        if server is not None:
            found += database_problems(server, *self._server_limits(options))
        if overdue:
            found.append(Problem(Unhealthy.SCHEDULE_OVERDUE, overdue))
        if options["json"]:
            verdict = [
                {"status": p.check.value, "check": p.check.name, "reason": p.reason} for p in found
            ]
            self.stdout.write(json.dumps({"healthy": not found, "problems": verdict}))
        elif not found:
            self.stdout.write(f"OK: {summary(report)}")
        for problem in found:
            if not options["json"]:
                self.stderr.write(f"UNHEALTHY: {problem.reason}")
        if found:
            raise SystemExit(found[0].check.value)

    def _server_limits(self, options: dict[str, Any]) -> tuple[int | None, float | None]:
        config = get_settings()
        history = options["max_history_length"] or config.HEALTH_MAX_HISTORY_LENGTH
        age = options["max_transaction_age"] or config.HEALTH_MAX_TRANSACTION_AGE
        return history, age

    def _server(self, options: dict[str, Any], using: str) -> DatabaseHealth | None:
        """The server's figures, read only when a limit asks for them."""
        if self._server_limits(options) == (None, None):
            return None
        return database_health(using)
