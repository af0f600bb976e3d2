"""The dashboard's section on schedules, flow keys and batches: cheap figures, each linked.

Each figure reads an index or a capped count: a dashboard refreshed every few seconds must not
scan a table of millions of rows. An app that is not installed has no figures (None).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.apps import apps

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.db.counting import Count, capped_count
from django_skipqueue.flow.status import KeyLine, flow_status
from django_skipqueue.models import Job, JobStatus

#: Flow keys the dashboard lists, the busiest first.
FLOW_KEYS_SHOWN = 10
#: A schedule this late (seconds) is overdue on the dashboard.
OVERDUE_SECONDS = 60.0
#: How far back the dashboard counts failed batches.
FAILED_WINDOW = timedelta(days=1)


@dataclass
class Others:
    schedules_enabled: int | None = None
    schedules_overdue: int | None = None
    flow_keys: list[KeyLine] = field(default_factory=list)
    blocked: Count | None = None
    batches_running: Count | None = None
    batches_failed: Count | None = None


def other_figures(using: str) -> Others:
    """Read the figures of the optional parts that are installed."""
    cap = get_settings().STATUS_COUNT_CAP
    blocked = Job.objects.using(using).filter(status=JobStatus.BLOCKED)
    others = Others(flow_keys=flow_status(using, FLOW_KEYS_SHOWN))
    others.blocked = capped_count(blocked, cap)  # the claim index's status prefix
    if apps.is_installed("django_skipqueue.scheduling"):
        _schedules(using, others)
    if apps.is_installed("django_skipqueue.workflows"):
        _batches(using, others)
    return others


def _schedules(using: str, others: Others) -> None:
    from django_skipqueue.scheduling.models import Schedule

    rows = Schedule.objects.using(using)
    others.schedules_enabled = rows.enabled().count()
    others.schedules_overdue = rows.due(DatabaseNowPlus(-OVERDUE_SECONDS)).count()


def _batches(using: str, others: Others) -> None:
    from django_skipqueue.workflows.models import Batch

    cap = get_settings().STATUS_COUNT_CAP
    rows = Batch.objects.using(using)
    others.batches_running = capped_count(rows.filter(finished_at__isnull=True), cap)
    since = DatabaseNowPlus(-FAILED_WINDOW.total_seconds())
    failed = rows.filter(failed__gt=0, finished_at__gte=since)
    others.batches_failed = capped_count(failed, cap)


def as_context(using: str) -> dict[str, Any]:
    """The template's view of the figures."""
    return {"figures": other_figures(using), "failed_window": "24 h"}
