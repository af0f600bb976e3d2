"""A schedule's task path never imports a module outside the project's packages.

The schedule admin's form (in the web process), the system check of SKIPQUEUE_SCHEDULES and
the scheduler (a real ``skipqueue_scheduler`` process) each look the task up; a schedule
naming ``this.x`` or a stand-in for ``antigravity`` (it creates a marker file when imported)
is refused with the reason, and neither module is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from django_skipqueue.models import Job
from django_skipqueue.scheduling.checks import check_schedules
from django_skipqueue.scheduling.models import Schedule
from tests.support.hostile_modules import HOSTILE_PATHS, ZEN, plant, planted

REFUSED = "outside the project's packages"
ADD = "admin:skipqueue_scheduling_schedule_add"
CHANGELIST = "admin:skipqueue_scheduling_schedule_changelist"
ECHO = "tests.support.tasks.echo"


def form(task_path: str) -> dict[str, str]:
    return {
        **{"name": "zen", "task_path": task_path, "cron": "", "interval_seconds": "60"},
        **{"time_zone": "UTC", "args": "[]", "kwargs": "{}", "queue_name": "", "priority": ""},
        **{"missed": "latest", "catch_up": "10", "enabled": "on"},
    }


@pytest.mark.django_db
@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_the_admin_form_refuses_the_path_without_importing(admin_client, tmp_path, capfd, path):
    with planted(tmp_path) as marker:
        response = admin_client.post(reverse(ADD), form(path))
        assert response.status_code == 200, "saved"
        assert not marker.exists()
        assert path.partition(".")[0] not in sys.modules
        errors = response.context["adminform"].form.errors
        assert REFUSED in " ".join(errors.get("task_path", [])), errors
    assert ZEN not in capfd.readouterr().out
    assert not Schedule.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_run_now_in_the_admin_refuses_a_stored_path_without_importing(admin_client, tmp_path,
                                                                      path):  # fmt: skip
    schedule = Schedule.objects.create(name="zen", task_path=path, interval_seconds=60)
    action = {"action": "run_now", "_selected_action": [schedule.pk]}
    with planted(tmp_path) as marker:
        response = admin_client.post(reverse(CHANGELIST), action, follow=True)
        assert not marker.exists()
        assert path.partition(".")[0] not in sys.modules
    said = [str(message) for message in response.context["messages"]]
    assert any(REFUSED in message for message in said), said
    assert not Job.objects.exists()


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_the_check_of_declared_schedules_refuses_the_path_without_importing(tmp_path, path):
    with planted(tmp_path) as marker:
        with override_settings(SKIPQUEUE_SCHEDULES={"zen": {"task": path, "interval": 60}}):
            (error,) = check_schedules()
        assert not marker.exists()
        assert path.partition(".")[0] not in sys.modules
        assert error.id == "django_skipqueue.E303"
        assert REFUSED in error.msg


@pytest.mark.mysql
@pytest.mark.django_db(transaction=True)
def test_the_scheduler_refuses_the_path_without_importing(child_env, manage_py, tmp_path):
    marker = plant(tmp_path)
    due = timezone.now() - timedelta(seconds=5)
    for number, path in enumerate([*HOSTILE_PATHS, ECHO]):
        Schedule.objects.create(name=f"s{number}", task_path=path, interval_seconds=60,
                                next_tick_at=due)  # fmt: skip
    env = {**child_env, "PYTHONPATH": os.pathsep.join([str(tmp_path), child_env["PYTHONPATH"]])}
    done = subprocess.run(
        [*manage_py, "skipqueue_scheduler", "--once"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the scheduler imported the antigravity stand-in"
    assert ZEN not in done.stdout + done.stderr, "the scheduler imported this"
    for path in HOSTILE_PATHS:
        schedule = Schedule.objects.get(task_path=path)
        assert REFUSED in schedule.last_error, schedule.last_error
        assert schedule.next_tick_at > due, "the schedule blocks the others"
    assert list(Job.objects.values_list("task_path", flat=True)) == [ECHO]
