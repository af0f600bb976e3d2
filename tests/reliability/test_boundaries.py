"""kill -9 of a worker at each boundary of a job's life, placed exactly.

The fault proxy (proxy.py) sits between the worker and the server and kills the worker
process at a chosen COMMIT: of the claim (committed, but the worker never hears of it), of the
completion (before the server sees it; committed but unacknowledged; acknowledged). Mid-job,
the task itself says when it is running. Each case checks what the job and the ledger must
show afterwards, for a plain task and for a transactional one.
"""

from __future__ import annotations

import signal
import time

import pytest

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from tests.reliability import tasks
from tests.reliability.audit import audit, job_rows
from tests.reliability.procs import STARTUP, Supervisor, kill_quietly, wait_for
from tests.reliability.proxy import Fault

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.slow]

CLAIM = b"SET `status` = 'claimed'"
COMPLETION = b"`status` = 'succeeded'"

#: boundary: (fault marker and mode, or None for mid-job), then (executions, attempts) for a
#: plain task and for a transactional one.
BOUNDARIES = {
    # Killed before the job started: its attempt goes back unspent (only started jobs spend).
    "after-claim": ((CLAIM, "ack_lost"), (1, 1), (1, 1)),
    "mid-job": (None, (2, 2), (1, 2)),
    "commit-not-sent": ((COMPLETION, "before"), (2, 2), (1, 2)),
    "commit-unacknowledged": ((COMPLETION, "ack_lost"), (1, 1), (1, 1)),
    "after-commit": ((COMPLETION, "after"), (1, 1), (1, 1)),
}


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_kill_9_at_each_boundary(boundary, transactional, proxy, rel_env, tmp_path, figures):
    fault_spec, plain, exactly_once = BOUNDARIES[boundary]
    executions, attempts = exactly_once if transactional else plain
    task = tasks.record_then_hold_tx if transactional else tasks.record_then_hold
    started = tmp_path / "started"
    result = task.enqueue(started=str(started), seconds=30 if fault_spec is None else 0)

    supervisor = Supervisor(
        rel_env(port=proxy.port), tmp_path / "runworkers.log",
        "--processes", "1", "--threads", "1", "--burst", "--queues", "default",
    )  # fmt: skip
    killed: list[int] = []

    def kill_worker() -> None:
        for pid in supervisor.workers():
            if kill_quietly(pid, signal.SIGKILL):  # False: it exited since it was listed
                killed.append(pid)

    fault = None
    if fault_spec is not None:
        fault = proxy.arm(Fault(fault_spec[0], fault_spec[1], action=kill_worker))
    began = time.monotonic()
    try:
        if fault is None:
            wait_for(started.exists, STARTUP)
            kill_worker()
        else:
            assert fault.fired.wait(STARTUP), "the fault never fired"
        code = supervisor.wait(timeout=STARTUP)
    finally:
        supervisor.stop()
    assert code == 0, supervisor.log()[-3000:]
    assert killed, "no worker was killed"

    job = Job.objects.get(pk=result.id)
    ledger = list(LedgerEntry.objects.values_list("job_id", "attempt", "worker"))
    owners = WorkerProcess.objects.filter(pid__in=killed).values_list("owner", flat=True)
    killed_owners = set(owners)
    report = audit(
        job_rows([(job.pk, job.status, job.attempts, job.worker_ids, job.errors)]),
        ledger,
        killed_owners=killed_owners,
        effects_once=transactional,
    )
    figures.update(
        boundary=boundary, transactional=transactional, status=job.status,
        attempts=job.attempts, executions=len(ledger), seconds=round(time.monotonic() - began, 1),
        errors=[e["exception_class_path"].rpartition(".")[2] for e in job.errors],
    )  # fmt: skip
    assert report.problems == []
    assert (job.status, len(ledger), job.attempts) == ("succeeded", executions, attempts)
    if attempts > 1:
        # The killed attempt was taken back by the supervisor at once, naming the dead owner.
        assert [e["exception_class_path"].rpartition(".")[2] for e in job.errors] == ["WorkerDied"]
        assert job.worker_ids[0] in killed_owners
    else:
        assert job.errors == []
