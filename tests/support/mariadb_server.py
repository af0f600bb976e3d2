"""A private MariaDB server for tests that break or replicate a database.

The shared server on 3306 is never stopped or reconfigured: a test that needs binary logs,
a replica or a crash starts its own ``mariadbd`` on a free port, in a temporary directory,
as a child process it owns and stops.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import MySQLdb
from MySQLdb.constants import ER

INSTALL_DB = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
SERVER = shutil.which("mariadbd") or "/usr/sbin/mariadbd"


def available() -> bool:
    return INSTALL_DB is not None and Path(SERVER).exists()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateMariaDB:
    """One mariadbd with its own data directory; ``extra`` are server options."""

    def __init__(self, directory: Path, *extra: str) -> None:
        self.directory = directory
        self.extra = extra
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> PrivateMariaDB:
        data = self.directory / "data"
        if not data.exists():
            subprocess.run(
                [INSTALL_DB, "--no-defaults", f"--datadir={data}", "--user=root",
                 "--auth-root-authentication-method=normal", "--skip-test-db"],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        self.process = subprocess.Popen(
            [SERVER, "--no-defaults", "--user=root", f"--datadir={data}",
             f"--port={self.port}", f"--socket={self.directory / 'sock'}",
             "--bind-address=127.0.0.1", f"--pid-file={self.directory / 'pid'}",
             f"--log-error={self.directory / 'err.log'}", "--innodb-buffer-pool-size=64M",
             "--transaction-isolation=READ-COMMITTED", *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._wait_until_up(timeout)
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def connect(self, database: str | None = None, **options: Any) -> MySQLdb.Connection:
        kwargs: dict[str, Any] = {"host": "127.0.0.1", "port": self.port, "user": "root"}
        if database:
            kwargs["database"] = database
        connection = MySQLdb.connect(**kwargs, **options)
        connection.autocommit(True)
        return connection

    def query(self, sql: str, params: Any = None, database: str | None = None) -> list[tuple]:
        connection = self.connect(database)
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
        finally:
            connection.close()

    def kill(self, connection_id: int) -> bool:
        """Kill one connection; False when it had ended before the KILL reached it."""
        return kill_connection(self.query, connection_id)

    def status(self, query: str) -> dict[str, Any]:
        """Return the single row of a SHOW statement as a dict (empty if no row)."""
        connection = self.connect()
        try:
            with connection.cursor(MySQLdb.cursors.DictCursor) as cursor:
                cursor.execute(query)
                return dict(cursor.fetchone() or {})
        finally:
            connection.close()

    def url(self, database: str) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def error_log(self) -> str:
        path = self.directory / "err.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def _wait_until_up(self, timeout: float) -> None:
        wait_until_up(self, timeout)


def kill_connection(query: Any, connection_id: int) -> bool:
    """Run ``KILL CONNECTION`` through ``query``; False if the connection was already gone.

    A connection read from the process list may end before its KILL arrives (a worker
    closing a connection, a task's thread finishing): the server then answers 1094 "Unknown
    thread id", which is the outcome the KILL wanted anyway.
    """
    try:
        query(f"KILL CONNECTION {int(connection_id)}")
    except MySQLdb.OperationalError as error:
        if error.args[0] != ER.NO_SUCH_THREAD:
            raise
        return False
    return True


def wait_until_up(server: Any, timeout: float) -> None:
    """Wait until a private ``server`` accepts a connection, or fail with its error log."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.connect().close()
            return
        except MySQLdb.OperationalError:
            exited = server.process is not None and server.process.poll() is not None
            if exited or time.monotonic() > deadline:
                raise RuntimeError(f"mariadbd did not start:\n{server.error_log()}") from None
            time.sleep(0.1)


def replicate(primary: PrivateMariaDB, replica: PrivateMariaDB, timeout: float = 30) -> None:
    """Make ``replica`` replicate everything ``primary`` logged since it started."""
    (log_file, _position, *_rest) = primary.query("SHOW MASTER STATUS")[0]
    first_log = log_file.rsplit(".", 1)[0] + ".000001"
    replica.query(
        "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%s, MASTER_USER='root', "
        "MASTER_PASSWORD='', MASTER_LOG_FILE=%s, MASTER_LOG_POS=4, MASTER_USE_GTID=no",
        [primary.port, first_log],
    )
    replica.query("START SLAVE")
    deadline = time.monotonic() + timeout
    while replica.status("SHOW SLAVE STATUS").get("Slave_IO_Running") != "Yes":
        assert time.monotonic() < deadline, replica.status("SHOW SLAVE STATUS")
        time.sleep(0.1)
