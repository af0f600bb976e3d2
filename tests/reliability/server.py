"""A private MariaDB server that a test (or the soak script) may stop, restart and kill.

The shared server on 3306 is never touched: tests that break the database start their own
``mariadbd`` on a free port with a throw-away data directory (../shared/DESIGN.md, "Tests that
break the database"). Starting one takes about 3 seconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import MySQLdb

from tests.support.mariadb_server import free_port, wait_until_up

ROOT = Path(__file__).resolve().parents[2]
#: Server options: small and quick to start, durable commits (the default), ROW binlog off.
SERVER_OPTIONS = (
    "--skip-name-resolve",
    "--innodb-buffer-pool-size=256M",
    "--innodb-log-file-size=128M",
    "--max-connections=400",
    "--innodb-lock-wait-timeout=10",
)


class PrivateMariaDB:
    """One ``mariadbd`` child process on its own port and data directory."""

    def __init__(self, base: Path | None = None, host: str = "127.0.0.1") -> None:
        self.base = base or Path(tempfile.mkdtemp(prefix="skipqueue-mariadb-"))
        #: The address it listens on (the multi-host rig: its bridge's address).
        self.host = host
        self.data = self.base / "data"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    # Life cycle.

    def start(self) -> PrivateMariaDB:
        """Initialise the data directory on first use, start the server, wait until it answers."""
        if not self.data.exists():
            subprocess.run(
                ["mariadb-install-db", "--no-defaults", f"--datadir={self.data}", "--user=root",
                 "--auth-root-authentication-method=normal"],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        command = [
            "mariadbd", "--no-defaults", "--user=root", f"--datadir={self.data}",
            f"--port={self.port}", f"--socket={self.base / 'sock'}", f"--bind-address={self.host}",
            f"--pid-file={self.base / 'pid'}", f"--log-error={self.base / 'err.log'}",
            *SERVER_OPTIONS,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_until_up(60)
        return self

    def stop(self, *, hard: bool = False, timeout: float = 60) -> None:
        """Shut the server down (SIGTERM: clean; ``hard``: SIGKILL, as a crash)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self, *, hard: bool = False, down_for: float = 0.0) -> float:
        """Stop and start again on the same port; return the seconds it was unreachable."""
        began = time.monotonic()
        self.stop(hard=hard)
        time.sleep(down_for)
        self.start()
        self.restarts += 1
        return time.monotonic() - began

    def destroy(self) -> None:
        self.stop(hard=True)
        shutil.rmtree(self.base, ignore_errors=True)

    def _wait_until_up(self, timeout: float) -> None:
        wait_until_up(self, timeout)

    # Access.

    def connect(self, database: str | None = None, **options: Any) -> Any:
        """Open a plain MySQLdb connection (autocommit) for control and checks."""
        kwargs: dict[str, Any] = {"host": self.host, "port": self.port, "user": "root"}
        if database:
            kwargs["database"] = database
        connection = MySQLdb.connect(**kwargs, **options)
        connection.autocommit(True)
        return connection

    def url(self, database: str, port: int | None = None) -> str:
        """A DATABASE_URL for Django processes (``port``: a proxy in front of this server)."""
        return f"mysql://root@{self.host}:{port or self.port}/{database}"

    def status(self, name: str) -> int:
        """Return a global status counter (Innodb_deadlocks, Innodb_row_lock_waits, ...)."""
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute("SHOW GLOBAL STATUS LIKE %s", [name])
            row = cursor.fetchone()
            return int(row[1]) if row else 0
        finally:
            connection.close()

    def error_log(self) -> str:
        path = self.base / "err.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # Schema.

    def create_database(self, name: str, env: dict[str, str]) -> None:
        """Create ``name`` and run the project's migrations into it (a child process)."""
        connection = self.connect()
        try:
            connection.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
            connection.cursor().execute(f"CREATE DATABASE `{name}`")
        finally:
            connection.close()
        manage = [sys.executable, str(ROOT / "testproject" / "manage.py")]
        subprocess.run(
            [*manage, "migrate", "-v0"],
            env={**env, "DATABASE_URL": self.url(name)},
            check=True,
            capture_output=True,
            timeout=300,
        )

    def truncate(self, database: str) -> None:
        """Empty every table of the queue and the demo ledger (a fresh start per test)."""
        connection = self.connect(database)
        try:
            cursor = connection.cursor()
            # The optional apps' tables refer to each other (a schedule's ticks, a pool's
            # units): this session empties them all, so their order does not matter.
            cursor.execute("SET SESSION foreign_key_checks = 0")
            cursor.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                "AND (table_name LIKE 'skipqueue%%' OR table_name LIKE 'demo%%')",
                [database],
            )
            tables = [table for (table,) in cursor.fetchall()]
            assert tables, f"no tables to empty in {database}"
            for table in tables:
                cursor.execute(f"TRUNCATE TABLE `{table}`")
        finally:
            connection.close()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
