"""``runworkers`` before its first job: a database that is down, unmigrated, or too small.

The outage tests use a private ``mariadbd`` (tests/support/mariadb_server.py): the shared server is
never stopped.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest
from django.db import connection

from tests.support.mariadb_server import PrivateMariaDB, available
from tests.support.workers import Runworkers, wait_for

DATABASE = "sq_startup"
JOBS = 30
ENQUEUE = (
    "from tests.support.worker_tasks import slow_record as task; "
    f"task.get_backend().enqueue_many([(task, [0.01], {{}})] * {JOBS})"
)
needs_mariadbd = pytest.mark.skipif(not available(), reason="needs mariadbd")


@pytest.fixture
def server(tmp_path):
    server = PrivateMariaDB(tmp_path / "mariadb").start()
    server.query(f"CREATE DATABASE {DATABASE}")
    yield server
    server.stop()


def prepare(server: PrivateMariaDB, manage_py: list[str], env: dict[str, str]) -> None:
    for command in (["migrate", "--verbosity", "0"], ["shell", "--command", ENQUEUE]):
        subprocess.run([*manage_py, *command], env=env, check=True, timeout=300)


def succeeded(server: PrivateMariaDB) -> int:
    sql = "SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded'"
    return int(server.query(sql, database=DATABASE)[0][0])


def lines_until(log: str, marker: str) -> list[str]:
    lines = log.splitlines()
    end = next(i for i, line in enumerate(lines) if marker in line)
    return lines[: end + 1]


@pytest.mark.mysql
@pytest.mark.slow
@needs_mariadbd
def test_runworkers_waits_for_a_database_that_is_down_at_start(
    server, manage_py, child_env, tmp_path
):
    env = {**child_env, "DATABASE_URL": server.url(DATABASE)}
    prepare(server, manage_py, env)
    server.stop()
    workers = Runworkers(manage_py, env, tmp_path / "workers.log", "--threads", "2")
    try:
        # A run that must end does not wait: one line, exit 1 (as skipqueue_relay --burst).
        began = time.monotonic()
        burst = subprocess.run(
            [*manage_py, "runworkers", "--burst"], env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        lines = burst.stderr.splitlines()
        assert (burst.returncode, len(lines)) == (1, 1), burst.stderr[-3000:]
        assert lines[0].startswith(
            f"CommandError: The database 'default' at 127.0.0.1:{server.port}"
        )
        assert "is unreachable" in lines[0] and time.monotonic() - began < 15, lines
        time.sleep(max(0.0, 20 - (time.monotonic() - began)))
        assert workers.process.poll() is None, workers.log()[-3000:]
        server.start()
        wait_for(lambda: succeeded(server) == JOBS, timeout=120)
        workers.signal(signal.SIGTERM)
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    outage = lines_until(workers.log(), "database reachable again")
    assert len(outage) < 20, "\n".join(outage)
    assert not any("Traceback" in line for line in outage), "\n".join(outage)
    assert "database unreachable, retrying database=default" in outage[0]


@pytest.mark.mysql
@pytest.mark.slow
@needs_mariadbd
def test_an_outage_while_running_logs_a_few_lines_per_process(
    server, manage_py, child_env, tmp_path
):
    env = {**child_env, "DATABASE_URL": server.url(DATABASE)}
    prepare(server, manage_py, env)
    workers = Runworkers(manage_py, env, tmp_path / "workers.log", "--processes", "2")
    try:
        wait_for(lambda: succeeded(server) == JOBS, timeout=60)
        before = len(workers.log().splitlines())
        server.stop()
        time.sleep(12)
        server.start()
        wait_for(lambda: workers.log().count("database reachable again") >= 3, timeout=60)
        workers.signal(signal.SIGTERM)
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    during = workers.log().splitlines()[before:]
    during = during[: max(i for i, line in enumerate(during) if "reachable again" in line) + 1]
    starts = [line for line in during if "database unreachable, retrying" in line]
    assert len({re.search(r"pid=(\d+)", line)[1] for line in starts}) == 3, "\n".join(during)
    assert len(during) < 20, "\n".join(during)
    assert "Traceback" not in "\n".join(during)


@pytest.mark.django_db(transaction=True)
def test_runworkers_on_an_unmigrated_database_says_to_migrate(manage_py, child_env, tmp_path):
    env = dict(child_env)
    if connection.vendor == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    else:
        empty = f"{connection.settings_dict['NAME']}_empty"
        recreate(empty)
        env["DATABASE_URL"] = re.sub(r"/[^/]*$", f"/{empty}", child_env["DATABASE_URL"])
    try:
        done = subprocess.run(
            [*manage_py, "runworkers", "--burst"], env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
    finally:
        if connection.vendor != "sqlite":
            drop(empty)
    assert done.returncode == 1, done.stderr[-3000:]
    assert 'run "python manage.py migrate" first' in done.stderr
    assert len(done.stderr.splitlines()) < 5, done.stderr


def recreate(name: str) -> None:
    drop(name)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")


def drop(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)}")


@pytest.mark.django_db(transaction=True)
def test_too_many_processes_are_refused_without_force(manage_py, child_env):
    done = subprocess.run(
        [*manage_py, "runworkers", "--burst", "--processes", "500"],
        env=child_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert "--processes 500 is more than 4 per core" in done.stderr
    if connection.vendor != "sqlite":
        assert "more than the server's max_connections" in done.stderr
    assert "runworkers starting" not in done.stderr


@pytest.mark.skip_locked
@pytest.mark.django_db(transaction=True)
def test_force_starts_a_pool_past_max_connections_with_a_warning(manage_py, child_env):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT @@max_connections" if connection.vendor == "mysql" else "SHOW max_connections"
        )
        limit = int(cursor.fetchone()[0])
    threads = str(limit)  # 1 + 1 x (1 + limit) connections
    done = subprocess.run(
        [*manage_py, "runworkers", "--burst", "--threads", threads, "--force"],
        env=child_env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"more than the server's max_connections ({limit}) (--force)" in done.stderr
    assert "runworkers stopped" in done.stderr
