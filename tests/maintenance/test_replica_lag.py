"""Acceptance: the purge pauses while a real replica lags, and finishes once it caught up.

The test starts a private primary (binary log, ROW format) and a private replica of it on
free ports; the shared server is left alone. The purge runs as ``manage.py skipqueue_purge``
in a child process whose settings name the replica as the database alias ``replica``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mariadb_server import PrivateMariaDB, available, replicate

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason="needs mariadb-install-db and mariadbd"),
]
ROOT = Path(__file__).resolve().parents[2]
DATABASE = "sq_maint_repl"
FILL = (
    "INSERT INTO skipqueue_job (queue_name, priority, status, task_path, args, kwargs, owner, "
    "attempts, max_attempts, lease_seconds, cancel_requested, enqueued_at, finished_at, errors, "
    "worker_ids) SELECT 'default', 0, 'succeeded', 'tests.support.tasks.noop', '[]', '{{}}', "
    "'w', 1, 1, "
    "60, FALSE, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) - INTERVAL 8 DAY, '[]', '[]' "
    "FROM seq_1_to_{count}"
)
OLD = "SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded'"


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Iterator[tuple[PrivateMariaDB, PrivateMariaDB]]:
    base = tmp_path_factory.mktemp("replication")
    (base / "primary").mkdir()
    (base / "replica").mkdir()
    primary = PrivateMariaDB(
        base / "primary", f"--log-bin={base / 'primary' / 'binlog'}", "--server-id=1",
        "--binlog-format=ROW", "--binlog-row-image=MINIMAL",
    )  # fmt: skip
    replica = PrivateMariaDB(
        base / "replica", "--server-id=2", f"--relay-log={base / 'replica' / 'relay'}"
    )
    try:
        primary.start()
        replica.start()
        replicate(primary, replica)
        primary.query(f"CREATE DATABASE {DATABASE}")
        manage("migrate", "--no-input", env=child_env(primary, replica), timeout=300)
        wait_for(lambda: replica.query("SHOW TABLES LIKE 'skipqueue_job'", database=DATABASE))
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


@pytest.fixture
def pair(servers) -> tuple[PrivateMariaDB, PrivateMariaDB]:
    primary, replica = servers
    primary.query("DELETE FROM skipqueue_job", database=DATABASE)
    wait_caught_up(primary, replica)
    return primary, replica


def child_env(primary: PrivateMariaDB, replica: PrivateMariaDB) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=primary.url(DATABASE),
        REPLICA_DATABASE_URL=replica.url(DATABASE),
        DJANGO_SETTINGS_MODULE="testproject.settings",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        PYTHONUNBUFFERED="1",
    )
    return env


def manage(*args: str, env: dict[str, str], timeout: float) -> str:
    command = [sys.executable, str(ROOT / "testproject" / "manage.py"), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Purge:
    """``skipqueue_purge`` running in a child process, its output collected line by line."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        command = [sys.executable, str(ROOT / "testproject" / "manage.py"), "skipqueue_purge"]
        self.process = subprocess.Popen(
            [*command, "--older-than", "7d", "--replica", "replica", *args], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            assert self.process.poll() is None or time.monotonic() < deadline, self.output()
            assert time.monotonic() < deadline, f"no line matching {pattern!r}:\n{self.output()}"
            time.sleep(0.05)

    def finish(self, timeout: float = 120) -> str:
        self.process.wait(timeout)
        self.reader.join(10)
        assert self.process.returncode == 0, self.output()
        return self.output()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def output(self) -> str:
        return "\n".join(self.lines)


def test_purge_pauses_while_the_replica_sql_thread_is_stopped_and_finishes_after(pair):
    primary, replica = pair
    primary.query(FILL.format(count=20_000), database=DATABASE)
    wait_caught_up(primary, replica)
    replica.query("STOP SLAVE SQL_THREAD")
    primary.query(FILL.format(count=1), database=DATABASE)  # events now pile up, unapplied
    assert replica.status("SHOW SLAVE STATUS")["Seconds_Behind_Master"] is None
    purge = Purge(child_env(primary, replica), "--chunk", "1000", "--max-replica-lag", "2")
    try:
        purge.wait_for_line(r"paused: replica replica lag is unknown \(its SQL thread is not")
        time.sleep(1.5)
        assert old_rows(primary) == 20_001, "nothing is deleted while the lag is unknown"
        replica.query("START SLAVE SQL_THREAD")
        output = purge.finish()
    finally:
        purge.stop()
    print(output)
    assert "resumed after" in output and "deleted 20,001 rows in 21 chunks" in output
    assert "paused 1x" in output
    assert old_rows(primary) == 0
    wait_for(lambda: old_rows(replica) == 0)


def test_purge_pauses_on_a_growing_lag_and_goes_on_when_the_replica_catches_up(pair):
    primary, replica = pair
    primary.query(FILL.format(count=30_000), database=DATABASE)
    wait_caught_up(primary, replica)
    [(blocked_id,)] = primary.query(
        "SELECT id FROM skipqueue_job ORDER BY id LIMIT 1 OFFSET 2500", database=DATABASE
    )
    # A reader on the replica holds a row that the third chunk deletes: the replica's SQL
    # thread waits for it, and Seconds_Behind_Master grows.
    holder = replica.connect(DATABASE)
    holder.autocommit(False)
    holder.cursor().execute("SELECT id FROM skipqueue_job WHERE id = %s FOR UPDATE", [blocked_id])
    purge = Purge(
        child_env(primary, replica), "--chunk", "1000", "--sleep", "0.2",
        "--max-replica-lag", "2",
    )  # fmt: skip
    try:
        lag = purge.wait_for_line(r"paused: replica replica is (\d+)s behind \(limit 2s\)")
        assert int(lag.group(1)) > 2
        deleted = 30_000 - old_rows(primary)
        time.sleep(1.5)
        assert 30_000 - old_rows(primary) == deleted, "no chunk while the replica lags"
        assert 2000 < deleted < 30_000
        holder.rollback()
        output = purge.finish()
    finally:
        holder.close()
        purge.stop()
    print(output)
    assert "resumed after" in output and "deleted 30,000 rows" in output
    wait_for(lambda: old_rows(replica) == 0)


@pytest.mark.skipif(not shutil.which("mariadb-binlog"), reason="needs mariadb-binlog")
def test_the_binary_log_has_one_transaction_per_chunk_of_at_most_chunk_rows(pair):
    primary, replica = pair
    primary.query("FLUSH BINARY LOGS")
    primary.query(FILL.format(count=20_000), database=DATABASE)
    wait_caught_up(primary, replica)
    (log_file, *_rest) = primary.query("SHOW MASTER STATUS")[0]
    manage(
        "skipqueue_purge", "--older-than", "7d", "--chunk", "3000", "--sleep", "0",
        env=child_env(primary, replica), timeout=120,
    )  # fmt: skip
    primary.query("FLUSH BINARY LOGS")
    rows = deleted_rows_per_transaction(primary, log_file)
    assert sum(rows) == 20_000
    assert max(rows) <= 3000 and len(rows) >= 7, rows


def deleted_rows_per_transaction(primary: PrivateMariaDB, log_file: str) -> list[int]:
    """Count the row images of DELETEs on the jobs table in each binlog transaction."""
    decoded = subprocess.run(
        ["mariadb-binlog", "-v", "--base64-output=decode-rows",
         str(primary.directory / log_file)],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    per_transaction, current = [], 0
    for line in decoded.splitlines():
        if line.startswith(f"### DELETE FROM `{DATABASE}`.`skipqueue_job`"):
            current += 1
        elif line.startswith("COMMIT") and current:
            per_transaction.append(current)
            current = 0
    return per_transaction


def old_rows(server: PrivateMariaDB) -> int:
    return server.query(OLD, database=DATABASE)[0][0]


def wait_caught_up(primary: PrivateMariaDB, replica: PrivateMariaDB, timeout: float = 60) -> None:
    count = "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM skipqueue_job"
    wait_for(
        lambda: primary.query(count, database=DATABASE) == replica.query(count, database=DATABASE),
        timeout,
    )


def wait_for(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
