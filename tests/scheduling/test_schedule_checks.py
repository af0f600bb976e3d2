"""``manage.py check`` refuses bad schedules in settings, each mistake with its own id."""

from __future__ import annotations

import subprocess

import pytest
from django.test import override_settings

from django_skipqueue.scheduling.checks import check_schedules
from django_skipqueue.setting_checks import check_settings

pytestmark = pytest.mark.vendor_neutral

GOOD = {"task": "tests.support.tasks.echo", "cron": "0 3 * * *", "time_zone": "Europe/Paris"}


def ids(schedules: object) -> list[str]:
    with override_settings(SKIPQUEUE_SCHEDULES=schedules):
        return [message.id for message in check_schedules()]


def test_a_good_schedule_passes():
    assert ids({"nightly": GOOD, "often": {"task": GOOD["task"], "interval": "90s"}}) == []


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({**GOOD, "cron": "0 25 * * *"}, "django_skipqueue.E302"),
        ({**GOOD, "cron": "every day"}, "django_skipqueue.E302"),
        ({**GOOD, "task": "tests.support.tasks.missing"}, "django_skipqueue.E303"),
        ({**GOOD, "task": "tests.support.tasks.not_a_task"}, "django_skipqueue.E303"),
        ({**GOOD, "queue": "not-configured"}, "django_skipqueue.E303"),
        ({**GOOD, "time_zone": "Europe/Pariss"}, "django_skipqueue.E304"),
        ({**GOOD, "interval": 60}, "django_skipqueue.E301"),
        ({**GOOD, "missed": "sometimes"}, "django_skipqueue.E301"),
        ({**GOOD, "catchup": 3}, "django_skipqueue.E301"),
        ({"cron": "0 3 * * *"}, "django_skipqueue.E301"),
    ],
)
def test_each_mistake_has_its_id(entry: dict, expected: str):
    assert ids({"nightly": entry}) == [expected]


def test_names_must_be_slugs_and_the_setting_a_dict():
    assert ids({"Nightly Report": GOOD}) == ["django_skipqueue.E301"]
    assert ids([GOOD]) == ["django_skipqueue.E301"]


def test_schedules_without_the_app_installed_are_reported(settings):
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS
                               if app != "django_skipqueue.scheduling"]  # fmt: skip
    settings.SKIPQUEUE_SCHEDULES = {"nightly": GOOD}
    assert "django_skipqueue.E305" in [message.id for message in check_settings()]


def test_manage_py_check_names_the_bad_expression(child_env, manage_py, tmp_path):
    module = tmp_path / "bad_schedule_settings.py"
    module.write_text(
        "from testproject.settings import *  # noqa\n"
        "SKIPQUEUE_SCHEDULES = {"
        "'nightly': {'task': 'tests.support.tasks.echo', 'cron': '0 3 * * 8'},"
        "'weekly': {'task': 'tests.support.tasks.echo', 'cron': '@weekly',"
        " 'time_zone': 'Mars/Olympus'}}\n"
    )
    env = {**child_env, "DJANGO_SETTINGS_MODULE": "bad_schedule_settings",
           "PYTHONPATH": f"{tmp_path}:{child_env['PYTHONPATH']}"}  # fmt: skip
    done = subprocess.run([*manage_py, "check"], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 1
    assert "django_skipqueue.E302" in done.stderr and "0 3 * * 8" in done.stderr, done.stderr
    assert "django_skipqueue.E304" in done.stderr and "Mars/Olympus" in done.stderr
