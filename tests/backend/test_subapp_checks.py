"""An optional app used without its INSTALLED_APPS line, or installed but not migrated, says so.

Each API call refuses at once (AppNotInstalled, before any SQL: these tests have no database
access), each setting of an app left out is an error (E104, E205, E305), a database that lacks
migrations is a warning of ``check --database`` (W006), and each daemon started on such a
database says "migrate" in one line and exits non-zero instead of a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import MySQLdb
import pytest
from django.db import connection
from django.test import override_settings

from django_skipqueue import outbox, reservations, workflows
from django_skipqueue.checks import check_migrated
from django_skipqueue.exceptions import AppNotInstalled
from django_skipqueue.outbox import inbox
from django_skipqueue.scheduling.definition import schedule_database
from django_skipqueue.setting_checks import check_settings
from tests.conftest import ROOT
from tests.support.tasks import echo

# Nothing here differs by database vendor: run once, in the MariaDB pass (scripts/test.sh).
pytestmark = pytest.mark.mysql

OUTBOX = "django_skipqueue.outbox"
RESERVATIONS = "django_skipqueue.reservations"
SCHEDULING = "django_skipqueue.scheduling"
WORKFLOWS = "django_skipqueue.workflows"


def without(settings, app: str) -> list[str]:
    return [name for name in settings.INSTALLED_APPS if name != app]


def receive() -> None:
    with inbox.receive("message-1"):
        pass


def open_batch() -> None:
    with workflows.batch():
        pass


CALLS: dict[str, tuple[str, Callable[[], object]]] = {
    "publish": (OUTBOX, lambda: outbox.publish("orders", {"id": 1})),
    "publish_many": (OUTBOX, lambda: outbox.publish_many([outbox.Message("orders", {})])),
    "inbox.receive": (OUTBOX, receive),
    "reserve": (RESERVATIONS, lambda: reservations.reserve(1, 2, 1, holder="h", ttl=60)),
    "restock": (RESERVATIONS, lambda: reservations.restock(1, 2, 5)),
    "available": (RESERVATIONS, lambda: reservations.available(1, 2)),
    "batch": (WORKFLOWS, open_batch),
    "chain": (WORKFLOWS, lambda: workflows.chain(workflows.step(echo))),
    "batch_result": (WORKFLOWS, lambda: workflows.batch_result(1)),
    "scheduler": (SCHEDULING, schedule_database),
}


@pytest.mark.parametrize("name", CALLS)
def test_an_api_call_without_its_app_names_the_line_to_add(settings, name):
    app, call = CALLS[name]
    with (
        override_settings(INSTALLED_APPS=without(settings, app)),
        pytest.raises(AppNotInstalled) as raised,
    ):
        call()
    assert f"needs {app!r} in INSTALLED_APPS: add it there" in str(raised.value)
    assert "then run migrate" in str(raised.value)


@pytest.mark.parametrize(
    ("app", "setting", "value", "check_id"),
    [
        (OUTBOX, "SKIPQUEUE_OUTBOX_BROKER_URL", "amqp://127.0.0.1", "django_skipqueue.E205"),
        (OUTBOX, "SKIPQUEUE_HEALTH_MAX_OUTBOX_AGE", 60, "django_skipqueue.E205"),
        (RESERVATIONS, "SKIPQUEUE_RESERVATION_POOL_CAP", 50, "django_skipqueue.E104"),
        (SCHEDULING, "SKIPQUEUE_SCHEDULER_INTERVAL", 5, "django_skipqueue.E305"),
    ],
)
def test_a_setting_of_an_app_left_out_is_an_error(settings, app, setting, value, check_id):
    for name in ("SKIPQUEUE_OUTBOX_BROKER_URL", "SKIPQUEUE_OUTBOX_TOPICS"):
        delattr(settings, name)  # the test project sets them; only `setting` is set here
    setattr(settings, setting, value)
    assert check_id not in ids(check_settings())  # the app is installed
    settings.INSTALLED_APPS = without(settings, app)
    errors = [m for m in check_settings() if m.id == check_id]
    assert len(errors) == 1
    assert setting in errors[0].msg and f"{app!r} is not in INSTALLED_APPS" in errors[0].msg


def test_a_setting_left_at_its_default_is_no_error(settings):
    del settings.SKIPQUEUE_OUTBOX_TOPICS
    settings.SKIPQUEUE_OUTBOX_BROKER_URL = None  # the default
    settings.SKIPQUEUE_RESERVATION_DATABASE = "default"  # the default
    settings.INSTALLED_APPS = [
        name for name in settings.INSTALLED_APPS if name not in (OUTBOX, RESERVATIONS)
    ]
    found = ids(check_settings())
    assert "django_skipqueue.E205" not in found and "django_skipqueue.E104" not in found


def ids(messages: list) -> list[str]:
    return [message.id for message in messages]


@pytest.fixture
def workflows_unrecorded() -> Iterator[None]:
    """Take the workflows app's rows out of django_migrations for the test (inside its
    transaction, rolled back after it): the database then lacks that app's migrations."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["skipqueue_workflows"])
    yield


@pytest.mark.django_db
def test_a_database_that_lacks_an_apps_migrations_is_a_warning(workflows_unrecorded, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["manage.py", "check", "--database", "default"])
    warnings = check_migrated(databases=["default"])
    assert ids(warnings) == ["django_skipqueue.W006"]
    assert "lacks 1 migration(s) of django-skipqueue (skipqueue_workflows: 0001_initial)" in (
        warnings[0].msg
    )
    assert 'run "python manage.py migrate"' in warnings[0].msg
    # manage.py migrate runs the database checks before it migrates: it says nothing there.
    monkeypatch.setattr(sys, "argv", ["manage.py", "migrate"])
    assert check_migrated(databases=["default"]) == []


@pytest.mark.django_db
def test_a_migrated_database_passes(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["manage.py", "check", "--database", "default"])
    assert check_migrated(databases=["default"]) == []
    assert check_migrated(databases=None) == []  # without --database, nothing is read


MODELS_LEFT_OUT = """
import django
django.setup()
from django.apps import apps
from django_skipqueue.outbox.models import OutboxMessage
from django_skipqueue.reservations.models import Pool, Unit
from django_skipqueue.scheduling.models import Schedule
from django_skipqueue.workflows.models import Batch
print([model._meta.db_table for model in (OutboxMessage, Pool, Unit, Schedule, Batch)])
print(",".join(model.__name__ for model in apps.get_app_config("django_skipqueue").get_models()))
"""


def test_models_of_an_app_left_out_keep_their_tables_and_join_no_other_app(tmp_path):
    """Imported without their app, they would have joined django_skipqueue (the package around
    them): tables named django_skipqueue_pool, which no migration creates, and models that
    makemigrations would put in a migration of django_skipqueue."""
    (tmp_path / "left_out_settings.py").write_text(
        "from testproject.settings import *  # noqa\n"
        "INSTALLED_APPS = [a for a in INSTALLED_APPS if a.count('.') != 1"
        " or not a.startswith('django_skipqueue.')]\n"
        "SKIPQUEUE_OUTBOX_TOPICS = {}\n"
    )
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="left_out_settings",
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
    )
    done = subprocess.run(
        [sys.executable, "-c", MODELS_LEFT_OUT], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    tables, core_models = done.stdout.splitlines()
    assert tables == str(
        ["skipqueue_outbox", "skipqueue_reservations_pool", "skipqueue_reservations_unit",
         "skipqueue_schedule", "skipqueue_batch"]
    )  # fmt: skip
    assert not {"OutboxMessage", "Pool", "Unit", "Schedule", "Batch"} & set(core_models.split(","))


# The daemons on a database where only the job queue's app is migrated.

BROKER = "amqp://guest:guest@127.0.0.1:5672/%2F"  # never reached: the start stops first
DAEMONS = {
    "skipqueue_relay": (["--burst", "--broker", BROKER], "skipqueue_outbox: 0001_initial"),
    "skipqueue_scheduler": (["--interval", "1"], "skipqueue_scheduling: 0001_initial"),
    "skipqueue_release_expired": (["--interval", "1"], "skipqueue_reservations: 0001_initial"),
}


@pytest.fixture(scope="module")
def core_only_env() -> Iterator[dict[str, str]]:
    """The environment of a manage.py whose database has the job queue's migrations only."""
    name = f"{connection.settings_dict['NAME']}_core_only"
    server = server_of(connection.settings_dict)
    link = MySQLdb.connect(**server)
    link.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
    link.cursor().execute(f"CREATE DATABASE `{name}`")
    env = dict(
        os.environ,
        DATABASE_URL=f"mysql://{server['user']}@{server['host']}:{server['port']}/{name}",
        DJANGO_SETTINGS_MODULE="testproject.settings",
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    try:
        migrate = [*manage(), "migrate", "django_skipqueue", "--verbosity", "0"]
        subprocess.run(migrate, env=env, check=True, timeout=120)
        yield env
    finally:
        link.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        link.close()


def server_of(settings_dict: dict) -> dict:
    return {
        "host": settings_dict["HOST"] or "127.0.0.1",
        "port": int(settings_dict["PORT"] or 3306),
        "user": settings_dict["USER"] or "root",
        "password": settings_dict["PASSWORD"] or "",
    }


def manage() -> list[str]:
    return [sys.executable, str(ROOT / "testproject" / "manage.py")]


def test_each_daemon_on_an_unmigrated_database_says_migrate_in_one_line(core_only_env):
    started = {name: start(name, core_only_env) for name in DAEMONS}  # side by side: faster
    for name, process in started.items():
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        lines = (out + err).strip().splitlines()
        assert process.returncode == 1, (name, lines[-20:])
        assert len(lines) == 1, (name, lines[-20:])
        assert DAEMONS[name][1] in lines[0], lines
        assert lines[0].endswith('run "python manage.py migrate".'), lines


def start(name: str, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [*manage(), name, *DAEMONS[name][0]]
    return subprocess.Popen(
        command, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_check_database_names_the_unapplied_migrations(core_only_env):
    done = subprocess.run(
        [*manage(), "check", "--database", "default"], env=core_only_env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]  # a warning
    warning = [line for line in done.stderr.splitlines() if "django_skipqueue.W006" in line]
    assert len(warning) == 1, done.stderr
    for label in ("skipqueue_outbox", "skipqueue_reservations", "skipqueue_scheduling"):
        assert f"{label}: 0001_initial" in warning[0]
    assert "django_skipqueue: " not in warning[0]  # migrated
