"""Misconfigurations a new user makes, and what each one says (checks E007-E010, start-up)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest
from django.core import checks

from django_skipqueue.compat import InvalidTask, task_backends
from django_skipqueue.conf import SkipQueueSettings, get_settings
from django_skipqueue.models import Job
from django_skipqueue.setting_checks import CHECKED_ELSEWHERE, RULES
from tests.conftest import ROOT
from tests.support.worker_tasks import slow_record

BACKEND = "django_skipqueue.backend.SkipQueueBackend"
URLS = "import tests.support.worker_tasks  # noqa\nurlpatterns = []\n"


def ours(**kwargs) -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks(**kwargs) if m.id.startswith("django_skipqueue")]


def found(message_id: str) -> list[str]:
    """Return the message and hint of every check result with this id."""
    return [f"{m.msg} {m.hint}" for m in ours() if m.id == message_id]


@pytest.mark.django_db
def test_misspelled_settings_are_named_with_the_likely_intended_one(settings):
    settings.SKIPQUEUE_MAX_ATTEMPT = 3
    settings.SKIPQUEUE_RETRY_BACKOF = 1
    [attempts, backoff] = sorted(found("django_skipqueue.E007"))
    assert "Unknown setting SKIPQUEUE_MAX_ATTEMPT." in attempts
    assert "Did you mean 'SKIPQUEUE_MAX_ATTEMPTS'?" in attempts
    assert "Did you mean 'SKIPQUEUE_RETRY_BACKOFF'?" in backoff


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("MAX_ATTEMPTS", 0, "must be a whole number from 1 to 1000, not 0"),
        ("MAX_ATTEMPTS", "5", "must be a whole number from 1 to 1000, not '5'"),
        ("HEARTBEAT_SECONDS", "soon", "must be a duration"),
        ("LEASE_SECONDS", -1, "greater than 0, not -1"),
        ("PURGE_INTERVAL", "0s", "greater than 0, or None"),
        ("WAKEUP", "yes", "must be True or False"),
        ("PURGE_REPLICAS", ["nowhere"], "a list of aliases in DATABASES"),
        ("PURGE_RETENTION", {"failed": "forever"}, "not 'forever' for 'failed'"),
        ("PREFETCH", -1, "a whole number >= 0, or None"),
        ("PREFETCH", "auto", "a whole number >= 0, or None"),
        ("PREFETCH_MAX_WAIT", 0, "greater than 0"),
    ],
)
def test_invalid_values_are_errors(settings, name, value, expected):
    setattr(settings, f"SKIPQUEUE_{name}", value)
    [message] = found("django_skipqueue.E008")
    assert message.startswith(f"SKIPQUEUE_{name} {expected}") or expected in message, message


def test_every_setting_has_a_rule():
    names = {f.name for f in dataclasses.fields(SkipQueueSettings)}
    assert names == set(RULES) | CHECKED_ELSEWHERE


@pytest.mark.django_db
def test_documented_values_pass(settings):
    settings.SKIPQUEUE_LEASE_SECONDS = "1m"
    settings.SKIPQUEUE_RETRY_BACKOFF = 0
    settings.SKIPQUEUE_PURGE_INTERVAL = None
    settings.SKIPQUEUE_PURGE_RETENTION = {"succeeded": "1d", "failed": None, "cancelled": 3600}
    settings.SKIPQUEUE_WAKEUP_HOST = None
    assert ours() == []


@pytest.mark.django_db(transaction=True)
def test_a_duration_string_works_wherever_seconds_go(settings):
    settings.SKIPQUEUE_LEASE_SECONDS = "1m"
    settings.SKIPQUEUE_HEARTBEAT_SECONDS = "2s"
    assert (get_settings().LEASE_SECONDS, get_settings().HEARTBEAT_SECONDS) == (60.0, 2.0)
    result = slow_record.enqueue()
    assert Job.objects.get(pk=result.id).lease_seconds == 60


@pytest.mark.django_db
def test_a_misspelled_retention_status_is_an_error(settings):
    settings.SKIPQUEUE_PURGE_RETENTION = {"succeded": "1s"}
    [message] = found("django_skipqueue.E009")
    assert "unknown status 'succeded'" in message and "never purged" in message
    assert "Did you mean 'succeeded'?" in message


@pytest.mark.django_db
def test_misspelled_keys_of_the_tasks_entry_are_errors(settings):
    settings.TASKS = {
        "default": {
            "BACKEND": BACKEND,
            "QUEUE": ["default", "emails"],
            "OPTIONS": {"DATABSE": "x"},
        }
    }
    [queues, database] = sorted(found("django_skipqueue.E010"))
    assert "TASKS['default'] has an unknown key 'QUEUE'." in queues
    assert "Did you mean 'QUEUES'?" in queues
    assert "TASKS['default']['OPTIONS'] has an unknown key 'DATABSE'." in database
    assert "Did you mean 'DATABASE'?" in database


def test_a_task_on_a_queue_named_under_a_misspelled_key_says_so(settings):
    settings.TASKS = {"default": {"BACKEND": BACKEND, "QUEUE": ["default", "emails"]}}
    with pytest.raises(InvalidTask) as caught:
        task_backends["default"].validate_task(slow_record.using(queue_name="emails"))
    message = str(caught.value)
    assert message.startswith("Queue 'emails' is not valid for backend.")  # Django's words
    assert "not in the QUEUES of task backend 'default' (default)" in message
    assert "has a key 'QUEUE': did you mean 'QUEUES'?" in message


def run_check(
    child_env, tmp_path, settings_source: str, urls: str = URLS
) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py check`` with these settings; the URLconf imports a task module."""
    (tmp_path / "first_settings.py").write_text(textwrap.dedent(settings_source))
    (tmp_path / "first_urls.py").write_text(urls)
    env = dict(
        child_env,
        DJANGO_SETTINGS_MODULE="first_settings",
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
    )
    return subprocess.run(
        [sys.executable, str(ROOT / "testproject" / "manage.py"), "check"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_app_missing_from_installed_apps_says_what_to_add(child_env, tmp_path):
    done = run_check(
        child_env,
        tmp_path,
        """
        from testproject.settings import *
        INSTALLED_APPS = [a for a in INSTALLED_APPS if not a.startswith("django_skipqueue")]
        ROOT_URLCONF = "first_urls"
        """,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "AppNotInstalled: Task backend 'default' is a SkipQueueBackend, but "
        "'django_skipqueue' is not in INSTALLED_APPS: add it there (its tables hold the jobs), "
        "then run migrate."
    ), done.stderr[-3000:]


def test_tasks_missing_with_the_app_installed_says_what_to_add(child_env, tmp_path):
    """Whatever optional apps are installed too (the outbox's switched the guard off)."""
    done = run_check(
        child_env,
        tmp_path,
        """
        from testproject.settings import *
        del TASKS
        ROOT_URLCONF = "first_urls"
        """,
    )
    assert done.returncode == 1
    assert "unexpected keyword argument" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "django_skipqueue is in INSTALLED_APPS, but the TASKS setting is missing" in last
    assert f'TASKS = {{"default": {{"BACKEND": "{BACKEND}"' in last, done.stderr[-3000:]


def test_a_project_that_uses_the_outbox_alone_needs_no_task_backend(child_env, tmp_path):
    done = run_check(
        child_env,
        tmp_path,
        """
        from testproject.settings import *
        TASKS = {}
        ROOT_URLCONF = "first_urls"
        """,
        urls="urlpatterns = []\n",
    )
    assert done.returncode == 0, done.stderr[-3000:]
