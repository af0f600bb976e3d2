"""Acceptance: workers survive killed connections and a restarted MariaDB, and lose nothing.

The server here is a private ``mariadbd`` (tests/support/mariadb_server.py): the shared one is
never stopped.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.support.mariadb_server import PrivateMariaDB, available
from tests.support.workers import Runworkers, wait_for

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason="needs mariadbd to start a private server"),
]

DATABASE = "sq_restart"
JOBS = 1500
ENQUEUE = (
    "from tests.support.worker_tasks import persistent_record as task; "
    f"task.get_backend().enqueue_many([(task, [0.03], {{}})] * {JOBS})"
)


@pytest.fixture
def server(tmp_path):
    server = PrivateMariaDB(tmp_path / "mariadb").start()
    server.query(f"CREATE DATABASE {DATABASE}")
    yield server
    server.stop()


def count(server: PrivateMariaDB, sql: str) -> int:
    return int(server.query(sql, database=DATABASE)[0][0])


def kill_connections(server: PrivateMariaDB) -> int:
    """Kill every connection to the queue's database: the workers' own and their tasks'.

    Return how many the KILLs reached (a listed connection may end before its KILL).
    """
    ids = server.query(
        "SELECT id FROM information_schema.processlist WHERE db = %s AND id <> CONNECTION_ID()",
        [DATABASE],
    )
    return sum(server.kill(connection_id) for (connection_id,) in ids)


def test_workers_survive_killed_connections_and_a_server_restart(
    server, child_env, manage_py, tmp_path
):
    env = {**child_env, "DATABASE_URL": server.url(DATABASE)}
    for command in (["migrate", "--verbosity", "0"], ["shell", "--command", ENQUEUE]):
        subprocess.run([*manage_py, *command], env=env, check=True, timeout=300)
    workers = Runworkers(
        manage_py, env, tmp_path / "workers.log",
        "--processes", "2", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        ledger = "SELECT COUNT(*) FROM demo_ledgerentry"
        wait_for(lambda: count(server, ledger) >= 150, timeout=120)
        assert kill_connections(server) > 0
        wait_for(lambda: count(server, ledger) >= 400, timeout=120)
        assert count(server, ledger) < JOBS - 300  # plenty of work left for after the restart
        server.stop()  # a clean restart, the way a deploy or failover does it
        time.sleep(1)
        server.start()
        assert workers.wait(timeout=300) == 0, workers.log()[-4000:]
    finally:
        workers.stop()

    by_status = dict(
        server.query("SELECT status, COUNT(*) FROM skipqueue_job GROUP BY status", None, DATABASE)
    )
    assert by_status == {"succeeded": JOBS}, by_status
    assert count(server, "SELECT COUNT(DISTINCT job_id) FROM demo_ledgerentry") == JOBS
    log = workers.log()
    assert "database unreachable, retrying" in log and "database reachable again" in log
