"""Processes of the reliability tests: runworkers supervisors, their workers, manage.py calls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MANAGE = [sys.executable, str(ROOT / "testproject" / "manage.py")]
SETTINGS = "tests.reliability.settings"
#: Seconds to wait for what needs a fresh runworkers to start, claim and reach a given point.
#: A minute is plenty on an idle machine and not always on a loaded 2-core one; the wait ends
#: as soon as the point is reached, so only a failing test waits this long.
STARTUP = 180


def child_env(database_url: str, base: dict[str, str] | None = None, **settings: Any) -> dict:
    """Environment of a child process: the database, the test settings, SKIPQUEUE_* overrides."""
    env = dict(base or os.environ)
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE=SETTINGS,
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        PYTHONUNBUFFERED="1",
        RELIABILITY_SETTINGS=json.dumps({f"SKIPQUEUE_{k}": v for k, v in settings.items()}),
    )
    return env


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    """Run a manage.py command to completion; return its output (fail loudly on error)."""
    done = subprocess.run(
        [*MANAGE, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise AssertionError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def manage_module(env: dict[str, str], module: str, *args: str, timeout: float = 300) -> str:
    """Run ``python -m module`` (a helper such as the producer) to completion."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"{module} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


class Supervisor:
    """``manage.py runworkers`` as a child process, its log in a file.

    Every instance is remembered until stopped, so that a failing test leaves no worker
    behind to claim the next test's jobs (see ``stop_all``).
    """

    started: list[Supervisor] = []

    def __init__(self, env: dict[str, str], log: Path, *args: str, prefix: tuple = ()) -> None:
        Supervisor.started.append(self)
        self.log_path = log
        self._log = log.open("a")
        self.process = subprocess.Popen(
            [*prefix, *MANAGE, "runworkers", *args],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

        self.wrapped = bool(prefix)

    @property
    def pid(self) -> int:
        """The runworkers supervisor's pid (under a wrapper such as faketime: its child)."""
        if not self.wrapped:
            return self.process.pid
        return wait_for(lambda: children(self.process.pid), 30)[0]

    def workers(self) -> list[int]:
        """The live worker processes (children of the supervisor)."""
        return children(self.pid)

    def wait_for_workers(self, count: int, timeout: float = 60) -> list[int]:
        return wait_for(lambda: len(self.workers()) >= count and self.workers(), timeout)

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._log.flush()

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, signum: int = signal.SIGQUIT, timeout: float = 15) -> int | None:
        """Stop the supervisor and make sure no worker outlives it (teardown)."""
        supervisor = children(self.process.pid) if self.wrapped else [self.process.pid]
        workers = [pid for parent in supervisor for pid in children(parent)]
        if self.process.poll() is None:
            for pid in supervisor:
                kill_quietly(pid, signum)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in workers:
            kill_quietly(pid, signal.SIGKILL)
        self._log.close()
        return self.process.returncode

    @classmethod
    def stop_all(cls) -> None:
        while cls.started:
            cls.started.pop().stop()


def children(pid: int) -> list[int]:
    """Return the pids whose parent is ``pid`` (from /proc), skipping zombies."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def kill_quietly(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


def wait_for(condition: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)
