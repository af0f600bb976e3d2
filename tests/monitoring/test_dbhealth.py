"""The server's health beside the queue's: a real long transaction, a real purge backlog.

The long transaction is a second client's, as a backup or a forgotten console would be: it
takes a consistent snapshot and holds it while this test commits updates on the queue's table.
InnoDB cannot purge the row versions those updates leave while the snapshot is open, so the
history list must count every one of them.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Iterator

import MySQLdb
import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from django_skipqueue.checks import check_binlog_format
from django_skipqueue.models import Job
from django_skipqueue.monitoring.dbhealth import database_health
from tests.support.tasks import noop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]
UPDATES = 150


@pytest.fixture
def snapshot() -> Iterator[tuple[int, float]]:
    """Another client's open transaction with a read view: (its connection id, start time)."""
    if connection.vendor != "mysql":
        pytest.skip("InnoDB figures: MySQL/MariaDB only")
    params = connection.get_connection_params()
    other = MySQLdb.connect(
        host=params.get("host", "127.0.0.1"),
        port=params.get("port", 3306),
        user=params.get("user", "root"),
        passwd=params.get("password", ""),
        db=params["database"],
    )
    try:
        cursor = other.cursor()
        cursor.execute("SELECT CONNECTION_ID()")
        (thread_id,) = cursor.fetchone()
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cursor.execute("SELECT COUNT(*) FROM skipqueue_job")
        yield int(thread_id), time.monotonic()
        other.rollback()
    finally:
        other.close()


def commit_updates(count: int) -> None:
    job = Job.objects.get(pk=noop.enqueue().id)
    for n in range(count):  # each in its own transaction (autocommit): one undo log each
        Job.objects.filter(pk=job.pk).update(priority=n % 100)


def test_a_long_transaction_shows_as_the_oldest_and_holds_the_history_list(snapshot):
    thread_id, began = snapshot
    commit_updates(UPDATES)
    time.sleep(1.0)
    health = database_health("default")
    held_for = time.monotonic() - began
    assert health.unavailable == {}
    # Another session on a shared server may be older still; never younger.
    assert health.oldest_transaction_age is not None
    assert health.oldest_transaction_age >= held_for - 0.2
    if health.oldest_transaction_age < held_for + 5:
        assert health.oldest_transaction_connection == thread_id
    assert health.history_length is not None and health.history_length >= UPDATES


def test_status_json_and_health_thresholds_report_them(snapshot, capsys):
    commit_updates(UPDATES)
    time.sleep(1.0)
    call_command("skipqueue_status", "--json")
    server = json.loads(capsys.readouterr().out)["database"]
    assert server["history_length"] >= UPDATES and server["oldest_transaction_age"] >= 1.0
    call_command("skipqueue_status")
    assert "database: history list length" in capsys.readouterr().out

    def health(*args: str) -> int:
        try:
            call_command("skipqueue_health", "--json", *args)
        except SystemExit as exit:
            return int(exit.code)
        return 0

    capsys.readouterr()
    assert health("--max-history-length", str(UPDATES // 2)) in (3, 5, 7)
    verdict = json.loads(capsys.readouterr().out)
    checks = {p["check"]: p["reason"] for p in verdict["problems"]}
    assert "history list length is" in checks["HISTORY_TOO_LONG"]
    health("--max-transaction-age", "0.5")
    verdict = json.loads(capsys.readouterr().out)
    checks = {p["check"]: p["reason"] for p in verdict["problems"]}
    assert "a transaction has been open" in checks["TRANSACTION_TOO_OLD"]
    health()  # no limit set: the server's figures are not checked
    checks = {p["check"] for p in json.loads(capsys.readouterr().out)["problems"]}
    assert not checks & {"HISTORY_TOO_LONG", "TRANSACTION_TOO_OLD"}


def test_the_metrics_view_exports_them(snapshot, client, settings):
    settings.SKIPQUEUE_METRICS_TOKEN = "health-token"
    commit_updates(UPDATES)
    time.sleep(1.0)
    response = client.get(reverse("skipqueue_metrics"), HTTP_AUTHORIZATION="Bearer health-token")
    gauges = {
        sample.name: sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }
    assert gauges["skipqueue_database_history_list_length"] >= UPDATES
    assert gauges["skipqueue_database_oldest_transaction_age_seconds"] >= 1.0


def test_the_dashboard_shows_them(snapshot, admin_client):
    thread_id, _ = snapshot
    time.sleep(0.5)
    html = admin_client.get(reverse("admin:django_skipqueue_job_dashboard")).content.decode()
    assert 'id="skipqueue-database"' in html
    assert "InnoDB history list length" in html and "not available" not in html
    health = database_health("default")
    if health.oldest_transaction_connection == thread_id:
        assert f"(connection {thread_id})" in html


def test_check_database_warns_of_statement_based_binary_logging(capsys):
    if connection.vendor != "mysql":
        pytest.skip("binlog_format: MySQL/MariaDB only")
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@SESSION.binlog_format")
        (before,) = cursor.fetchone()
        cursor.execute("SET SESSION binlog_format = 'STATEMENT'")
    try:
        [warning] = check_binlog_format(databases=["default"])
        assert warning.id == "django_skipqueue.W003" and "SKIP LOCKED" in warning.msg
        call_command("check", "--database", "default")
        assert "django_skipqueue.W003" in capsys.readouterr().err
        assert check_binlog_format(databases=None) == []  # plain `check`: no connection
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"SET SESSION binlog_format = '{before}'")
    assert check_binlog_format(databases=["default"]) == []


@pytest.mark.mysql
def test_the_connections_beside_max_connections():
    """The figures of the connection budget (refusals: tests/reliability/multihost)."""
    from django_skipqueue.monitoring.dbhealth import database_health

    health = database_health("default")
    assert health.max_connections and health.max_connections >= health.connections_open >= 1
    assert health.max_used_connections >= health.connections_open
    assert health.refused_connections is not None and health.refused_connections >= 0
    assert f"of {health.max_connections} (most ever" in health.line()


@pytest.fixture
def without_process_privilege(child_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A child environment whose database user has every privilege on the test database
    but not PROCESS, as on a managed server that hides InnoDB's figures."""
    if connection.vendor != "mysql":
        pytest.skip("the PROCESS privilege: MySQL/MariaDB only")
    name = connection.settings_dict["NAME"]
    user, password = f"skq_obs_{secrets.token_hex(4)}", secrets.token_hex(12)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
        cursor.execute(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{user}'@'%'")
    try:
        url = f"mysql://{user}:{password}@127.0.0.1:{connection.settings_dict['PORT'] or 3306}"
        yield {**child_env, "DATABASE_URL": f"{url}/{name}"}
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{user}'@'%'")


def test_a_server_that_hides_them_says_not_available(without_process_privilege, manage_py):
    env = without_process_privilege
    status = subprocess.run(
        [*manage_py, "skipqueue_status", "--json"], env=env, capture_output=True, text=True
    )
    assert status.returncode == 0, status.stderr
    server = json.loads(status.stdout)["database"]
    assert server["history_length"] is None and server["oldest_transaction_age"] is None
    assert server["unavailable"]["history_length"] == "needs the PROCESS privilege"
    assert server["unavailable"]["oldest_transaction_age"] == "needs the PROCESS privilege"
    text = subprocess.run(
        [*manage_py, "skipqueue_status"], env=env, capture_output=True, text=True
    ).stdout
    assert "history list length not available (needs the PROCESS privilege)" in text
    health = subprocess.run(
        [*manage_py, "skipqueue_health", "--json", "--max-history-length", "1000"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert health.returncode != 0  # a limit the server cannot be checked against fails
    reasons = {p["check"]: p["reason"] for p in json.loads(health.stdout)["problems"]}
    assert "not available (needs the PROCESS privilege)" in reasons["HISTORY_TOO_LONG"]
