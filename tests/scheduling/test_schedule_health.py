"""skipqueue_health flags an enabled schedule whose next tick is overdue (exit status 9)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.scheduling.models import Schedule

pytestmark = pytest.mark.django_db


def health(capsys, *options: str) -> list[dict]:
    with pytest.raises(SystemExit):  # no live worker here: unhealthy in any case
        call_command("skipqueue_health", "--json", *options)
    return json.loads(capsys.readouterr().out)["problems"]


def schedule(name: str, late: float, *, enabled: bool = True) -> None:
    Schedule.objects.create(
        name=name, task_path="tests.support.tasks.noop", interval_seconds=60, enabled=enabled,
        next_tick_at=read_db_now("default") - timedelta(seconds=late),
    )  # fmt: skip


def test_a_schedule_late_past_the_limit_is_named_and_the_others_are_not(capsys):
    schedule("stuck", 3600)
    schedule("just-due", 5)
    schedule("stuck-but-disabled", 3600, enabled=False)
    overdue = [p for p in health(capsys) if p["check"] == "SCHEDULE_OVERDUE"]
    assert [p["status"] for p in overdue] == [9]
    assert "stuck (1h" in overdue[0]["reason"] or "stuck (60" in overdue[0]["reason"]
    assert "just-due" not in overdue[0]["reason"] and "disabled" not in overdue[0]["reason"]


def test_the_limit_comes_from_the_option(capsys):
    schedule("a-little-late", 120)
    assert not [p for p in health(capsys) if p["check"] == "SCHEDULE_OVERDUE"]
    names = [p["reason"] for p in health(capsys, "--max-schedule-lag", "60")
             if p["check"] == "SCHEDULE_OVERDUE"]  # fmt: skip
    assert len(names) == 1 and "a-little-late" in names[0]
