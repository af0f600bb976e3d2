"""The batches' row of the admin's queue dashboard (the workflows app's hook).

Called by ``WorkflowsConfig.dashboard_panels``; the core never imports this module.
"""

from __future__ import annotations

from datetime import timedelta

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.db.counting import capped_count
from django_skipqueue.extensions import Panel

#: How far back the dashboard counts failed batches.
FAILED_WINDOW = timedelta(days=1)


def dashboard_panels(using: str) -> list[Panel]:
    """Batches and chains running, and failed in the last day: capped counts."""
    from django_skipqueue.workflows.models import Batch

    cap = get_settings().STATUS_COUNT_CAP
    rows = Batch.objects.using(using)
    since = DatabaseNowPlus(-FAILED_WINDOW.total_seconds())
    context = {
        "running": capped_count(rows.filter(finished_at__isnull=True), cap),
        "failed": capped_count(rows.filter(failed__gt=0, finished_at__gte=since), cap),
        "failed_window": "24 h",
    }
    return [Panel("admin/skipqueue_workflows/dashboard_row.html", context, "row", "batches")]
