"""manage.py skipqueue_health: exit 0 when the queue is healthy, else a status per problem."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from django_skipqueue.conf import get_settings
from django_skipqueue.extensions import HealthCheck, extensions
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
    database_problems,
    problems,
    summary,
)
from django_skipqueue.monitoring.stats import queue_status

#: The core's exit statuses, in the order the help says them (the apps' come in between).
CORE_STATUSES = (
    (3, "no live worker"),
    (4, "a ready job waited too long"),
    (5, "the reaper is not running"),
    (7, "the InnoDB history list is too long"),
    (8, "a transaction on the server is too old (7 and 8 when their limits are set)"),
)


def app_checks() -> list[HealthCheck]:
    """The checks the installed apps add through ``Extension.health_checks``."""
    return [check for extension in extensions() for check in extension.health_checks()]


class Command(BaseCommand):
    @property
    def help(self) -> str:  # type: ignore[override]
        """The exit statuses, the installed apps' included."""
        statuses = [
            *CORE_STATUSES,
            *((int(check.status), check.describe) for check in app_checks()),
        ]
        said = ", ".join(f"{code} {text}" for code, text in sorted(statuses))
        return (
            f"Check the queue for orchestrators. Exit status: 0 healthy, {said}, "
            "1 cannot check; with several problems, the first of these. Each problem is printed."
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
        for check in app_checks():
            check.add_arguments(parser)
        add_backend(parser, "Task backend to check")
        parser.add_argument("--json", action="store_true", help="Print the verdict as JSON.")
        accept_skip_checks(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        thresholds = Thresholds.from_settings(options["max_ready_age"], options["max_reaper_age"])
        try:
            backend = backend_named(options["backend"])
            report = queue_status(backend.database, backend.queue_names, window_minutes=1)
            server = self._server(options, backend.database)
            others = [
                Problem(check.status, reason)
                for check in app_checks()
                for reason in check.problems(backend.database, options)
            ]
        except (CommandError, DatabaseError, ValueError) as error:
            raise CommandError(f"UNHEALTHY: cannot check the queue: {error}") from error
        if server is not None:
            others += database_problems(server, *self._server_limits(options))
        # The queue's own problems first, then the server's and the apps' by exit status.
        found = problems(report, thresholds) + sorted(others, key=lambda p: p.check.value)
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
