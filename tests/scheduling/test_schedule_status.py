"""Schedules in skipqueue_status: next and last tick in their zone, the last job's outcome."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from django_skipqueue.models import Job
from django_skipqueue.scheduling.models import Schedule
from tests.support.admin import make_job

pytestmark = pytest.mark.django_db


def test_status_lists_enabled_schedules_with_their_last_job(capsys):
    job = make_job("failed")
    Schedule.objects.create(
        name="nightly", task_path="tests.support.tasks.echo", cron="0 3 * * *",
        time_zone="Europe/Paris", next_tick_at=datetime(2026, 12, 4, 2, tzinfo=UTC),
        last_tick_at=datetime(2026, 12, 3, 2, tzinfo=UTC), last_job_id=job.pk, missed_ticks=2,
    )  # fmt: skip
    Schedule.objects.create(name="off", task_path="tests.support.tasks.echo",
                            interval_seconds=60, enabled=False)  # fmt: skip
    call_command("skipqueue_status")
    text = capsys.readouterr().out
    assert (
        "  nightly: 0 3 * * * (Europe/Paris); next 2026-12-04 03:00:00 CET; "
        f"last 2026-12-03 03:00:00 CET, job {job.pk} failed; missed 2"
    ) in text
    assert "off" not in text
    call_command("skipqueue_status", "--json")
    [line] = json.loads(capsys.readouterr().out)["schedules"]
    assert (line["name"], line["last_job_status"]) == ("nightly", "failed")
    Job.objects.all().delete()
    call_command("skipqueue_status", "--json")
    assert json.loads(capsys.readouterr().out)["schedules"][0]["last_job_status"] == "purged"
