"""Concurrent processes reserve, confirm and release on a few hot pools, some killed with -9.

Clients are forked by :mod:`tests.support.reservation_client`; a
``skipqueue_release_expired --interval`` process sweeps expired holds meanwhile (and is killed
once too). Afterwards every invariant of :mod:`tests.support.reservation_audit` holds, what a
client saw confirmed is confirmed with its units, and what a process killed inside its open
transaction held left no trace.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from django_skipqueue import reservations
from django_skipqueue.reservations.models import HoldState, Reservation
from django_skipqueue.reservations.sweep import release_expired
from tests.support.reservation_audit import audit
from tests.support.reservation_client import POOLS
from tests.support.scale import scaled

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]

ROOT = Path(__file__).resolve().parents[2]
ENDINGS = [HoldState.CONFIRMED, HoldState.RELEASED, HoldState.EXPIRED]
#: The longest ttl a client asks for, in seconds.
LONGEST_TTL = 3.0


def alive(pid: int) -> bool:
    return kill(pid, 0)


def kill(pid: int, signum: int) -> bool:
    """Send ``signum``; False when the process had already exited (a client may finish between
    the moment it is chosen and its SIGKILL, more so on a loaded machine)."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


class Run:
    """Forked client processes, a sweeper process, and the kills of one run."""

    def __init__(self, env: dict[str, str], manage_py: list[str], tmp: Path) -> None:
        self.env, self.manage_py, self.tmp = env, manage_py, tmp
        self.rng = random.Random(17)
        self.clients: dict[int, Path] = {}
        self.stallers: dict[int, Path] = {}
        self.killed: list[int] = []
        self.stalled: list[int] = []
        self.errors = (tmp / "errors.txt").open("a")
        self.launcher = subprocess.Popen(
            [sys.executable, "-m", "tests.support.reservation_client"],
            cwd=ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
        )
        assert self._read() == "ready", self.error_text()
        self.sweeper = self._sweeper()
        self.until = 0.0

    def start(self, seconds: float, processes: int) -> None:
        self.until = time.time() + seconds
        staller = self.client(stall=True)
        self.stallers[staller] = self.clients.pop(staller)
        for _ in range(processes):
            self.client()

    def client(self, *, stall: bool = False) -> int:
        log = self.tmp / f"client-{len(self.clients) + len(self.stallers)}.log"
        seed = len(self.clients) + len(self.stallers) + 1000 * len(self.killed)
        self.launcher.stdin.write(f"{seed} {self.until} {log}{' stall' if stall else ''}\n")
        self.launcher.stdin.flush()
        pid = int(self._read())
        self.clients[pid] = log
        return pid

    def kill_one(self) -> None:
        """kill -9 a running client at a random instant (mid-transaction or mid-hold)."""
        running = [pid for pid in self.clients if alive(pid)]
        if running:
            victim = self.rng.choice(running)
            if kill(victim, signal.SIGKILL):
                self.killed.append(victim)

    def kill_stalled(self, wait: float = 0) -> None:
        """Kill the stallers whose reservation is made and uncommitted (waiting up to ``wait``)."""
        deadline = time.monotonic() + wait
        for pid, log in list(self.stallers.items()):
            while "stalled" not in (text := log.read_text() if log.exists() else ""):
                assert alive(pid), f"a staller died: {self.error_text()}"
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            else:
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
                self.stalled.append(int(text.split()[1]))
                del self.stallers[pid]

    def restart_sweeper(self) -> None:
        os.kill(self.sweeper.pid, signal.SIGKILL)
        self.sweeper.wait()
        self.sweeper = self._sweeper()

    def finish(self) -> None:
        """Wait for the clients that were not killed to write ``done``."""
        deadline = time.time() + max(0.0, self.until - time.time()) + 60
        for pid, log in self.clients.items():
            if pid in self.killed:
                continue
            while not log.exists() or not log.read_text().endswith("done\n"):
                assert alive(pid) and time.time() < deadline, f"{log}: {self.error_text()}"
                time.sleep(0.1)

    def close(self) -> None:
        for pid in [*self.clients, *self.stallers]:
            kill(pid, signal.SIGKILL)
        for process in (self.sweeper, self.launcher):
            process.kill()
            process.wait()
        self.launcher.stdin.close()
        self.launcher.stdout.close()
        self.errors.close()

    def confirmed(self) -> dict[int, int]:
        """Reservations that a client saw confirmed, with their quantities."""
        seen = {}
        for log in self.clients.values():
            for line in log.read_text().splitlines() if log.exists() else ():
                words = line.split()
                if words[0] == "confirmed":
                    seen[int(words[1])] = int(words[2])
        return seen

    def error_text(self) -> str:
        if not self.errors.closed:
            self.errors.flush()
        return (self.tmp / "errors.txt").read_text()[-3000:]

    def _read(self) -> str:
        return self.launcher.stdout.readline().strip()

    def _sweeper(self) -> subprocess.Popen:
        return subprocess.Popen(
            [*self.manage_py, "skipqueue_release_expired", "--interval", "0.2"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=self.errors,
        )  # fmt: skip


def run_and_audit(child_env, manage_py, tmp_path: Path, processes: int, seconds: float):
    for item, location in POOLS:
        reservations.restock(item, location, 40, reference="opening stock")
    run = Run(child_env, manage_py, tmp_path)
    try:
        run.start(seconds, processes)
        while time.time() < run.until - 2:
            time.sleep(run.rng.uniform(0.2, 0.8))
            run.kill_stalled()
            run.kill_one()
            run.client()  # a replacement, so the load stays
            if len(run.killed) == 10:
                run.restart_sweeper()
        run.kill_stalled(wait=60)
        run.finish()
    finally:
        run.close()
    assert "Traceback" not in run.error_text(), run.error_text()
    time.sleep(LONGEST_TTL + 0.2)  # every hold is now past its time
    release_expired()
    result = audit()
    assert not result.problems, "\n".join(result.problems)
    seen = run.confirmed()
    states = dict(Reservation.objects.filter(pk__in=seen).values_list("pk", "state"))
    lost = {pk for pk in seen if states.get(pk) != HoldState.CONFIRMED}
    assert not lost, f"confirmed by a client, not in the database: {sorted(lost)[:10]}"
    assert run.stalled, "no process was killed inside its open transaction"
    assert not Reservation.objects.filter(pk__in=run.stalled).exists()
    return run, result


def test_processes_killed_mid_transaction_and_mid_hold_leave_every_pool_consistent(
    child_env, manage_py, tmp_path
):
    run, result = run_and_audit(child_env, manage_py, tmp_path, processes=8, seconds=20)
    assert len(run.killed) >= 15
    # The run did what it claims: every ending happened, many times (none is left held).
    for state in ENDINGS:
        assert result.states[state] >= 10, result.states
    assert len(run.confirmed()) >= 10
    for pool in POOLS:
        assert result.pools[pool]["ledger_restock"] > 40, result.pools[pool]


@pytest.mark.slow
def test_sixteen_processes_for_a_minute(child_env, manage_py, tmp_path):
    # A minute on MariaDB; the same sixteen processes for 20 s on PostgreSQL (support/scale.py).
    seconds = scaled(60, 20)
    run, result = run_and_audit(child_env, manage_py, tmp_path, processes=16, seconds=seconds)
    assert len(run.killed) >= scaled(50, 15)
    for state in ENDINGS:
        assert result.states[state] >= scaled(50, 10), result.states
