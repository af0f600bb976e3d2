"""System checks and the isolation level the claim runs at."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from django_skipqueue.checks import check_database, check_time_zone


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
    monkeypatch.setattr(type(connection.features), "has_select_for_update_skip_locked", False)
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
