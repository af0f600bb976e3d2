"""System checks and the isolation level the claim runs at."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from django_skipqueue.checks import check_database, check_shared_database, check_time_zone
from django_skipqueue.compat import DUMMY_BACKEND


def ids(messages) -> list[str]:
    return [message.id for message in messages]


@pytest.mark.mysql
@pytest.mark.django_db
def test_mysql_connections_run_at_read_committed():
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@tx_isolation")
        assert cursor.fetchone()[0] == "READ-COMMITTED"
    assert check_database("default") == []


@pytest.mark.mysql
def test_repeatable_read_is_warned(monkeypatch):
    options = dict(connection.settings_dict.get("OPTIONS", {}), isolation_level="repeatable read")
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    assert ids(check_database("default")) == ["django_skipqueue.W001"]


def test_database_without_skip_locked_is_an_error(monkeypatch):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite is allowed without SKIP LOCKED")
    monkeypatch.setattr(connection.features, "has_select_for_update_skip_locked", False)
    assert ids(check_database("default")) == ["django_skipqueue.E001"]


def test_sqlite_without_immediate_transactions_is_warned(monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {})
    assert ids(check_database("default")) == ["django_skipqueue.W002"]


def test_use_tz_is_required(settings):
    settings.USE_TZ = False
    assert ids(check_time_zone()) == ["django_skipqueue.E003"]


@pytest.mark.django_db
def test_unknown_database_and_bad_queue_names_are_errors(settings):
    settings.TASKS = {
        "default": {
            "BACKEND": "django_skipqueue.backend.SkipQueueBackend",
            "QUEUES": ["default", "bad name"],
        },
        "elsewhere": {
            "BACKEND": "django_skipqueue.backend.SkipQueueBackend",
            "OPTIONS": {"DATABASE": "missing"},
        },
    }
    found = ids(checks.run_checks())
    assert "django_skipqueue.E004" in found
    assert "django_skipqueue.E002" in found


@pytest.mark.django_db
def test_the_project_passes_its_checks():
    assert [m for m in checks.run_checks() if m.id.startswith("django_skipqueue")] == []


@pytest.mark.django_db
def test_two_skipqueue_aliases_on_one_database_are_an_error(settings, monkeypatch):
    """Job rows do not record their alias: two aliases would share (and run) each other's jobs."""
    from django.conf import settings as live_settings

    from django_skipqueue.compat import task_backends

    same = {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}
    dummy = {"BACKEND": DUMMY_BACKEND}
    settings.TASKS = {"default": same, "dummy": dummy, "second": same}
    [error] = [m for m in checks.run_checks() if m.id == "django_skipqueue.E006"]
    assert "'default' and 'second'" in error.msg
    settings.TASKS = {"default": same, "dummy": dummy}
    assert "django_skipqueue.E006" not in ids(checks.run_checks())

    # Another DATABASES alias of the same database is the same database.
    copy = dict(live_settings.DATABASES["default"])
    monkeypatch.setitem(live_settings.DATABASES, "same_again", copy)
    settings.TASKS = {"default": same, "third": {**same, "OPTIONS": {"DATABASE": "same_again"}}}
    assert ids(check_shared_database(task_backends["third"])) == ["django_skipqueue.E006"]
    assert ids(check_shared_database(task_backends["default"])) == []
