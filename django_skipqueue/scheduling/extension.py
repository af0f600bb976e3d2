"""The schedules' part of the core's commands and dashboard (the scheduling app's hooks).

Called by ``SchedulingConfig``'s hooks of the same name; the core never imports this module.
"""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Mapping
from enum import IntEnum
from typing import Any

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.extensions import HealthCheck, Panel, StatusSection
from django_skipqueue.management.arguments import positive_float
from django_skipqueue.scheduling.status import overdue_problem, render, schedule_status

#: A schedule this late (seconds) is overdue on the dashboard.
OVERDUE_SECONDS = 60.0


class SchedulingHealth(IntEnum):
    """The exit status of ``skipqueue_health`` that the scheduling app adds."""

    SCHEDULE_OVERDUE = 9


def status_sections(using: str) -> list[StatusSection]:
    """The enabled schedules, as ``"schedules"`` in ``--json`` and a table in the text."""
    lines = schedule_status(using)
    if lines is None:
        return []
    return [StatusSection("schedules", [line.as_dict() for line in lines], render(lines))]


def health_checks() -> list[HealthCheck]:
    return [
        HealthCheck(
            SchedulingHealth.SCHEDULE_OVERDUE,
            "a schedule's tick is overdue",
            _overdue,
            _add_max_schedule_lag,
        )
    ]


def _add_max_schedule_lag(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--max-schedule-lag",
        type=positive_float,
        metavar="SECONDS",
        help="Longest acceptable delay of an enabled schedule's next tick "
        "(default: SKIPQUEUE_HEALTH_MAX_SCHEDULE_LAG).",
    )


def _overdue(using: str, options: Mapping[str, Any]) -> list[str]:
    lag = options.get("max_schedule_lag") or get_settings().HEALTH_MAX_SCHEDULE_LAG
    overdue = overdue_problem(using, lag)
    return [overdue] if overdue else []


def dashboard_panels(using: str) -> list[Panel]:
    """A row of the dashboard's figures: schedules enabled and overdue (the scheduler's index)."""
    from django_skipqueue.scheduling.models import Schedule

    rows = Schedule.objects.using(using)
    context = {
        "enabled": rows.enabled().count(),
        "overdue": rows.due(DatabaseNowPlus(-OVERDUE_SECONDS)).count(),
    }
    return [Panel("admin/skipqueue_scheduling/dashboard_row.html", context, "row", "schedules")]
