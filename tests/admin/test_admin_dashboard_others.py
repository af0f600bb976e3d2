"""The dashboard shows schedules, flow keys, blocked jobs and batches, each read from its rows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from django_skipqueue.scheduling.models import Schedule
from django_skipqueue.workflows.models import Batch
from tests.support.admin import dashboard_url
from tests.support.tasks import export_for

pytestmark = pytest.mark.django_db

ECHO = "tests.support.tasks.echo"


def field(page: str, name: str) -> str:
    found = re.search(rf'data-field="{name}"[^>]*>([^<]*)<', page)
    assert found, name
    return found.group(1).strip()


def test_the_dashboard_shows_schedules_flow_keys_blocked_jobs_and_batches(admin_client):
    now = timezone.now()
    Schedule.objects.create(name="late", task_path=ECHO, interval_seconds=60,
                            next_tick_at=now - timedelta(hours=2))  # fmt: skip
    Schedule.objects.create(name="on-time", task_path=ECHO, interval_seconds=60,
                            next_tick_at=now + timedelta(minutes=1))  # fmt: skip
    Schedule.objects.create(name="off", task_path=ECHO, interval_seconds=60, enabled=False)
    for _ in range(3):
        export_for.enqueue(7)  # one slot: one admitted, two blocked
    Batch.objects.create(size=2, created_at=now)
    Batch.objects.create(size=2, succeeded=1, failed=1, created_at=now, finished_at=now)
    Batch.objects.create(size=2, succeeded=2, created_at=now, finished_at=now)
    page = admin_client.get(dashboard_url()).content.decode()
    assert field(page, "schedules-enabled") == "2 enabled"
    assert field(page, "schedules-overdue") == "1 overdue"
    assert field(page, "blocked") == "2"
    assert field(page, "batches-running") == "1 running"
    assert field(page, "batches-failed") == "1 failed in the last 24 h"
    key = re.search(r'<tr data-flow-key="([^"]+)">', page)
    assert key and key.group(1) == f"{export_for.module_path}:customer:7"
    assert (field(page, "running"), field(page, "slots-held"), field(page, "waiting")) == (
        "0", "1", "2"
    )  # fmt: skip
