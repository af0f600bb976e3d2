"""Connections cut under a live worker: it reconnects, and an unknown commit is reconciled.

Two kinds of fault, neither of which kills the worker process:

- ``KILL CONNECTION`` from the server side while the worker's claim waits on a table lock,
  while a job runs, and while its completion waits on a row lock: the statement (and its
  transaction) is lost, the worker reconnects and carries on, and the job runs once.
- The fault proxy cuts the connection at a COMMIT: before the server sees it, or after the
  server committed but before the worker heard back. The worker cannot know which; it must
  re-read the rows and decide. A committed claim it never learned of is given back; a
  committed completion is recognised as its own; neither the job nor its effect is repeated.
"""

from __future__ import annotations

import re
import time

import pytest

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from tests.reliability import tasks
from tests.reliability.control import Control
from tests.reliability.procs import STARTUP, Supervisor, wait_for
from tests.reliability.proxy import Fault

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.slow]

CLAIM = b"SET `status` = 'claimed'"
COMPLETION = b"`status` = 'succeeded'"
FAST = {"HEARTBEAT_SECONDS": 0.5, "IDLE_POLL_SECONDS": 0.2}


@pytest.fixture
def control():
    ctl = Control()
    yield ctl
    ctl.close()


def start_worker(env: dict, tmp_path, *extra: str) -> Supervisor:
    return Supervisor(
        env, tmp_path / "runworkers.log",
        "--processes", "1", "--threads", "1", "--queues", "default", *extra,
    )  # fmt: skip


def finish(supervisor: Supervisor, result, timeout: float = STARTUP) -> Job:
    """Wait until the job is finished, then stop the worker gracefully (exit 0)."""
    try:
        wait_for(lambda: Job.objects.filter(pk=result.id).finished().exists(), timeout)
        supervisor.stop(signum=2)
    finally:
        supervisor.stop()
    assert supervisor.process.returncode == 0, supervisor.log()[-3000:]
    return Job.objects.get(pk=result.id)


def one_worker_survived() -> WorkerProcess:
    [worker] = WorkerProcess.objects.filter(role="worker")
    return worker


def worker_reconnected(supervisor: Supervisor) -> bool:
    """The worker's own log lines: a database error, then the database reachable again."""
    log = supervisor.log()
    return bool(re.search(r"^database unreachable, retrying", log, re.M)) and (
        "reachable again" in log
    )


def executions() -> list[tuple[int, str]]:
    return list(LedgerEntry.objects.values_list("attempt", "worker"))


def test_kill_connection_during_claim(control, rel_env, tmp_path, figures):
    result = tasks.record_then_hold.enqueue()
    control.execute("LOCK TABLES skipqueue_job WRITE")
    supervisor = start_worker(rel_env(**FAST), tmp_path)
    try:
        waiting = wait_for(lambda: control.sessions("%= 'ready'%SKIP LOCKED%"), STARTUP)
        killed = control.kill(waiting)
    finally:
        control.execute("UNLOCK TABLES")
    assert killed == len(waiting), "a waiting claim was gone before its KILL"
    job = finish(supervisor, result)
    worker = one_worker_survived()
    figures.update(killed=killed, attempts=job.attempts, executions=len(executions()))
    assert (job.status, job.attempts, job.errors) == ("succeeded", 1, [])
    assert executions() == [(1, worker.owner)]
    assert worker_reconnected(supervisor)


def test_kill_connection_during_a_job(control, rel_env, tmp_path, figures):
    """Every connection of the worker dies while a job runs; this job and the next run once."""
    started, proceed = tmp_path / "started", tmp_path / "proceed"
    first = tasks.record_then_hold.using(max_attempts=1).enqueue(
        started=str(started), proceed=str(proceed), seconds=60
    )
    supervisor = start_worker(rel_env(**FAST), tmp_path)
    wait_for(started.exists, STARTUP)
    killed = control.kill(control.sessions())
    time.sleep(1.5)  # the worker's next heartbeats meet the dead connection
    proceed.touch()
    second = tasks.record_then_hold.using(max_attempts=1).enqueue()
    job = finish(supervisor, second)
    worker = one_worker_survived()
    first_job = Job.objects.get(pk=first.id)
    figures.update(killed=killed, statuses=[first_job.status, job.status])
    assert (first_job.status, job.status) == ("succeeded", "succeeded"), job.errors
    assert sorted(executions()) == [(1, worker.owner)] * 2
    assert worker_reconnected(supervisor)


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_kill_connection_during_completion(control, rel_env, tmp_path, figures, transactional):
    task = tasks.record_then_hold_tx if transactional else tasks.record_then_hold
    started, proceed = tmp_path / "started", tmp_path / "proceed"
    result = task.enqueue(started=str(started), proceed=str(proceed), seconds=60)
    # No lease renewal within the test: it updates the same row and, sent while the row is
    # held, would block the worker's queue thread (and with it the completion) for the whole
    # lock wait timeout. On a loaded machine a 0.5 s heartbeat often came first.
    quiet = rel_env(**{**FAST, "HEARTBEAT_SECONDS": 600})
    supervisor = start_worker(quiet, tmp_path, "--lease", "1800")
    wait_for(started.exists, STARTUP)
    # Claimed and running: now hold the row, so that its completion has to wait for it.
    control.execute("START TRANSACTION")
    control.execute("SELECT id FROM skipqueue_job WHERE id = %s FOR UPDATE", [result.id])
    proceed.touch()
    try:
        waiting = wait_for(lambda: control.sessions("%'succeeded'%"), STARTUP)
        killed = control.kill(waiting)
    finally:
        control.execute("ROLLBACK")
    assert killed == len(waiting), "a waiting completion was gone before its KILL"
    job = finish(supervisor, result)
    worker = one_worker_survived()
    ledger = executions()
    figures.update(killed=killed, attempts=job.attempts, executions=len(ledger))
    assert job.status == "succeeded"
    if transactional:
        # The job's own transaction died with its connection: rolled back, run again.
        assert job.attempts == 2 and ledger == [(2, worker.owner)]
    else:
        # Only the completion was lost: recorded again after the reconnect, not re-run.
        assert (job.attempts, job.errors) == (1, [])
        assert ledger == [(1, worker.owner)]


#: commit: (marker, mode), then attempts, and whether the worker counts a lost lease.
COMMIT_FAULTS = {
    "claim-unacknowledged": (CLAIM, "ack_lost"),
    "completion-not-sent": (COMPLETION, "before"),
    "completion-unacknowledged": (COMPLETION, "ack_lost"),
}


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
@pytest.mark.parametrize("commit", COMMIT_FAULTS)
def test_a_commit_with_an_unknown_outcome_is_reconciled(
    commit, transactional, proxy, rel_env, tmp_path, figures
):
    task = tasks.record_then_hold_tx if transactional else tasks.record_then_hold
    result = task.enqueue()
    fault = proxy.arm(Fault(*COMMIT_FAULTS[commit]))
    supervisor = start_worker(rel_env(port=proxy.port, **FAST), tmp_path)
    try:
        assert fault.fired.wait(STARTUP), "the fault never fired"
    finally:
        job = finish(supervisor, result)
    worker = one_worker_survived()
    ledger = executions()
    figures.update(
        commit=commit, transactional=transactional, attempts=job.attempts,
        executions=len(ledger), errors=[e["exception_class_path"] for e in job.errors],
        worker_succeeded=worker.succeeded, worker_lost_leases=worker.lost_leases,
    )  # fmt: skip
    assert job.status == "succeeded"
    assert [owner for _, owner in ledger] == [worker.owner], "the effect happened once"
    if transactional and commit == "completion-not-sent":
        # The job's transaction (its effect and its completion) rolled back: attempt 2 redid
        # both, once.
        assert job.attempts == 2 and ledger[0][0] == 2
    else:
        assert (job.attempts, ledger[0][0]) == (1, 1)
        assert job.errors == []
