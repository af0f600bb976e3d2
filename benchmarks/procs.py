"""Worker processes: start them in their own session, measure their CPU and memory, stop them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil


@dataclass
class Fleet:
    """The processes of one run (each command started in a new session, with its log)."""

    procs: list[subprocess.Popen] = field(default_factory=list)

    @classmethod
    def start(cls, commands: Iterable[list[str]], env: dict[str, str], log: Path) -> Fleet:
        fleet = cls()
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            for command in commands:
                fleet.procs.append(
                    subprocess.Popen(
                        command,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
        return fleet

    def tree(self) -> list[psutil.Process]:
        """Every live process of the fleet: the roots and all their descendants."""
        found = []
        for proc in self.procs:
            try:
                root = psutil.Process(proc.pid)
                found += [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
        return found

    def cpu_seconds(self) -> float:
        """CPU (user + system) used so far by the live fleet, including reaped children.

        Workers run until stopped (no burst mode), so no root exits inside a measured window.
        """
        total = 0.0
        for proc in self.tree():
            try:
                times = proc.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
            except psutil.NoSuchProcess:
                continue
        return total

    def rss_mib(self) -> list[float]:
        """Resident memory of every process of the fleet, in MiB."""
        sizes = []
        for proc in self.tree():
            try:
                sizes.append(proc.memory_info().rss / 2**20)
            except psutil.NoSuchProcess:
                continue
        return sizes

    def alive(self) -> bool:
        return any(proc.poll() is None for proc in self.procs)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM every root's process group, wait, then SIGKILL whatever of the tree is left.

        A supervisor may put its children in process groups of their own, so the tree is
        noted first and every process of it is checked at the end.
        """
        tree = self.tree()
        for proc in self.procs:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
        _, alive = psutil.wait_procs(tree, timeout=max(0.5, deadline - time.monotonic()))
        for leftover in alive:
            try:
                leftover.kill()
            except psutil.NoSuchProcess:
                continue
        psutil.wait_procs(alive, timeout=5)


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def server_cpu_seconds(name: str, pid: int | None = None) -> float:
    """CPU used so far by the long-running server called ``name`` (mariadbd, redis-server).

    The oldest such process is the shared server: tests may start and stop private servers
    of the same name meanwhile, and their CPU must not count. ``pid`` picks one server
    instead (a private server that a scenario measures).
    """
    try:
        server = psutil.Process(pid) if pid is not None else _oldest(name)
        if server is None:
            return 0.0
        times = server.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.user + times.system


def _oldest(name: str) -> psutil.Process | None:
    found = [p for p in psutil.process_iter(["name", "create_time"]) if p.info["name"] == name]
    return min(found, key=lambda proc: proc.info["create_time"]) if found else None
