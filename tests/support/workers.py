"""Helpers to run ``manage.py runworkers`` as a real process and watch the queue meanwhile."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.db import connections

from django_skipqueue.models import Job, WorkerProcess
from django_skipqueue.worker.owner import pid_of


class Runworkers:
    """A ``runworkers`` supervisor process, its log in a file."""

    def __init__(self, manage_py: list[str], env: dict[str, str], log: Path, *args: str) -> None:
        self.log_path = log
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [*manage_py, "runworkers", *args], env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._log.flush()

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        """Make sure the process and its children are gone (test teardown)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in worker_pids(alive_only=True):
            if _is_runworkers(pid):
                kill_quietly(pid, signal.SIGKILL)
        self._log.close()


def wait_for(
    condition: Callable[[], Any], timeout: float, interval: float = 0.05, what: str = ""
) -> Any:
    """Poll ``condition`` (on fresh reads) until it is truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or 'condition'} not met within {timeout} s")
        time.sleep(interval)
        connections["default"].close_if_unusable_or_obsolete()


def worker_pids(alive_only: bool = False) -> list[int]:
    rows = WorkerProcess.objects.filter(role="worker")
    if alive_only:
        rows = rows.filter(stopped_at__isnull=True)
    return [row.pid for row in rows if not alive_only or _alive(row.pid)]


@contextlib.contextmanager
def all_frozen(pids: list[int]) -> Iterator[None]:
    """Freeze every given process (SIGSTOP) and wait until the server has finished what they sent.

    A frozen client may have sent a COMMIT the server has not applied yet; reading the queue
    before the server settles would miss it. With every client frozen and no statement of theirs
    still running on the server, what is read inside the block is final until they resume.

    A statement that waits for a row lock held by a frozen client's open transaction (two
    workers' transactions on one flow key, say) cannot go on until that client resumes: it
    counts as settled, not as running, or the wait would last the lock wait timeout.
    """
    for pid in pids:
        kill_quietly(pid, signal.SIGSTOP)
    try:
        try:
            wait_for(_settled, 60, what="server idle")
        except AssertionError as error:
            raise AssertionError(f"{error}; still running: {_running_statements()!r}") from None
        yield
    finally:
        for pid in pids:
            kill_quietly(pid, signal.SIGCONT)


def _settled() -> bool:
    """No statement of another client runs, except lock waits; twice, 0.25 s apart.

    Twice: the server's list of lock waits (INNODB_TRX on MySQL) may be a moment old, and a
    statement shown waiting may just have been given its lock by a commit that was in flight.
    """
    if _statements_running_for_others():
        return False
    time.sleep(0.25)
    return not _statements_running_for_others()


def _running_statements() -> list[tuple]:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT id, command, time, state, LEFT(info, 200) FROM information_schema.processlist"
            " WHERE command NOT IN ('Sleep', 'Daemon', 'Binlog Dump')"
            " AND id <> CONNECTION_ID() AND db = DATABASE()"
        )
        return list(cursor.fetchall())


def _statements_running_for_others() -> int:
    """Return how many statements other clients of this database are running now.

    A statement waiting for a row lock is not running: it cannot change anything until the
    lock's holder, frozen too, resumes.
    """
    connection = connections["default"]
    if connection.vendor == "postgresql":
        sql = (
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
            " AND datname = current_database() AND wait_event_type IS DISTINCT FROM 'Lock'"
        )
    elif connection.vendor == "mysql":
        sql = (
            "SELECT count(*) FROM information_schema.processlist"
            " WHERE command NOT IN ('Sleep', 'Daemon', 'Binlog Dump')"
            " AND id <> CONNECTION_ID() AND db = DATABASE()"
            " AND id NOT IN (SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX"
            " WHERE trx_state = 'LOCK WAIT')"
        )
    else:
        raise NotImplementedError(f"no statement list on {connection.vendor}")
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return int(cursor.fetchone()[0])


def holder_pid(job_id: int | str) -> int | None:
    owner = Job.objects.filter(pk=job_id, status="claimed").values_list("owner", flat=True).first()
    return pid_of(owner) if owner else None


def status_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in Job.objects.values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def kill_quietly(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _is_runworkers(pid: int) -> bool:
    try:
        return b"runworkers" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
