"""The dashboard's figures on flow keys and blocked jobs, and the rows the apps add to them.

Each figure reads an index or a capped count: a dashboard refreshed every few seconds must not
scan a table of millions of rows. An installed app adds its rows (schedules, batches) through
``Extension.dashboard_panels``; the core names none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django_skipqueue.conf import get_settings
from django_skipqueue.db.counting import Count, capped_count
from django_skipqueue.extensions import Panel, extensions
from django_skipqueue.flow.status import KeyLine, flow_status
from django_skipqueue.models import Job, JobStatus

#: Flow keys the dashboard lists, the busiest first.
FLOW_KEYS_SHOWN = 10


@dataclass
class Others:
    flow_keys: list[KeyLine] = field(default_factory=list)
    blocked: Count | None = None


def other_figures(using: str) -> Others:
    """Read the flow keys and the blocked jobs (the claim index's status prefix)."""
    cap = get_settings().STATUS_COUNT_CAP
    blocked = Job.objects.using(using).filter(status=JobStatus.BLOCKED)
    return Others(
        flow_keys=flow_status(using, FLOW_KEYS_SHOWN), blocked=capped_count(blocked, cap)
    )


def app_panels(using: str) -> list[Panel]:
    """The panels the installed apps add, in app order."""
    return [panel for extension in extensions() for panel in extension.dashboard_panels(using)]


def as_context(using: str) -> dict[str, Any]:
    """The template's view of the figures and of the apps' panels, by place."""
    panels = app_panels(using)
    rows = [panel for panel in panels if panel.place == "row"]
    return {
        "figures": other_figures(using),
        "sections": [panel for panel in panels if panel.place == "section"],
        "rows": rows,
        "heading": ", ".join(["Flow keys", *(panel.title for panel in rows)]),
    }
