"""The database refuses a running worker's credentials (a password rotated under it): said
once as such, naming the user and the host, and a ``--burst`` run exits non-zero instead of
retrying forever as if the server were down (issue 34, defect 10). On a private mariadbd:
the test changes an account's password."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.mariadb_server import PrivateMariaDB, available
from tests.support.workers import Runworkers, wait_for

DATABASE = "sq_refused"
ENQUEUE = (
    "from tests.support.worker_tasks import slow_record as task; "
    "task.get_backend().enqueue_many([(task, [0.2], {})] * 40)"
)

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason="needs mariadbd"),
]


@pytest.fixture
def server(tmp_path):
    server = PrivateMariaDB(tmp_path / "mariadb").start()
    server.query(f"CREATE DATABASE {DATABASE}")
    server.query("CREATE USER 'sq'@'127.0.0.1' IDENTIFIED BY 'first-secret'")
    server.query(f"GRANT ALL ON {DATABASE}.* TO 'sq'@'127.0.0.1'")
    yield server
    server.stop()


def succeeded(server: PrivateMariaDB) -> int:
    sql = "SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded'"
    return int(server.query(sql, database=DATABASE)[0][0])


def test_a_burst_run_whose_credentials_are_refused_exits_non_zero(
    server, manage_py, child_env, tmp_path
):
    url = f"mysql://sq:first-secret@127.0.0.1:{server.port}/{DATABASE}"
    env = {**child_env, "DATABASE_URL": url}
    for command in (["migrate", "--verbosity", "0"], ["shell", "--command", ENQUEUE]):
        subprocess.run([*manage_py, *command], env=env, check=True, timeout=300)
    workers = Runworkers(manage_py, env, tmp_path / "workers.log", "--burst", "--threads", "2")
    try:
        wait_for(lambda: succeeded(server) >= 2, timeout=60)
        server.query("ALTER USER 'sq'@'127.0.0.1' IDENTIFIED BY 'second-secret'")
        for (session,) in server.query("SELECT id FROM information_schema.processlist "
                                       "WHERE user = 'sq'"):  # fmt: skip
            server.kill(session)
        code = workers.wait(timeout=60)
    finally:
        workers.stop()
    log = workers.log()
    assert code == 1, log[-3000:]
    assert succeeded(server) < 40
    refused = [line for line in log.splitlines() if line.startswith("database refused")]
    assert refused and all("user=sq host=127.0.0.1:" in line for line in refused), log[-3000:]
    assert all("1045" in line for line in refused)
    assert len(refused) <= 2, "once per process: the worker's and the supervisor's"
    # The kill itself is a lost connection (2013): the refusal is never called unreachable.
    assert not [line for line in log.splitlines() if "unreachable" in line and "1045" in line]
    assert "Traceback" not in log, log[-3000:]
    assert "secret" not in log.replace("credentials", "")
    assert "(the database refused the credentials; not restarted)" in log
