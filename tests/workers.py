"""Helpers to run ``manage.py runworkers`` as a real process and watch the queue meanwhile."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import connections

from django_skipqueue.models import Job, WorkerProcess
from django_skipqueue.owner import pid_of


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
