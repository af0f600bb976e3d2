"""A burst run ends when its queue is empty, not when a ready job is only locked for a moment.

The claim skips a locked row (SKIP LOCKED): a ready job that another transaction holds, one
that will roll back, is not there for that claim but is there a moment later. ``runworkers
--burst`` must tell the two apart (issue 41): it runs the job once the lock goes, and still
exits at once when nothing is ready.
"""

from __future__ import annotations

import re
import time

import pytest
from django.db import transaction

from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus
from testproject.demo.models import LedgerEntry
from testproject.demo.tasks import record
from tests.support.workers import Runworkers, worker_pids

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]

#: Seconds the job stays locked after the worker has started: many claim rounds.
LOCKED_FOR = 2.0


def started(workers: Runworkers, timeout: float = 60) -> None:
    """Wait until a worker process has registered (it claims at once after that)."""
    deadline = time.monotonic() + timeout
    while not worker_pids():
        assert workers.process.poll() is None, workers.log()[-3000:]
        assert time.monotonic() < deadline, "no worker registered"
        time.sleep(0.05)


@pytest.mark.parametrize("queues", [["--queues", "default"], []], ids=["named", "every"])
def test_burst_waits_for_a_ready_job_locked_by_a_transaction_that_rolls_back(
    backend, child_env, manage_py, tmp_path, queues
):
    job_id = int(backend.enqueue(record, [], {"label": "locked"}).id)
    with transaction.atomic():
        # As a claim that fails after its UPDATE: the row is locked and claimed, uncommitted.
        locked = Job.objects.select_for_update().get(pk=job_id)
        Job.objects.filter(pk=locked.pk).update(status=JobStatus.CLAIMED, owner="doomed")
        workers = Runworkers(
            manage_py, child_env, tmp_path / "burst.log",
            "--processes", "1", "--threads", "1", "--burst", *queues,
        )  # fmt: skip
        try:
            started(workers)  # a plain loop: wait_for would close this open transaction
            time.sleep(LOCKED_FOR)
            exited = workers.process.poll()
            transaction.set_rollback(True)
        except BaseException:
            workers.stop()
            raise
    try:
        assert exited is None, f"exited {exited} with the job locked:\n{workers.log()[-2000:]}"
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert Job.objects.get(pk=job_id).status == JobStatus.SUCCEEDED
    assert LedgerEntry.objects.filter(job_id=job_id).count() == 1


def test_burst_exits_promptly_on_an_empty_queue(child_env, manage_py, tmp_path):
    workers = Runworkers(
        manage_py, child_env, tmp_path / "burst.log",
        "--processes", "1", "--threads", "1", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    # The worker's own uptime: the supervisor's start and exit are slow on a loaded machine.
    stopped = re.search(r"worker stopped .*reason=drained .*uptime_s=([0-9.]+)", workers.log())
    assert stopped, workers.log()[-3000:]
    print(f"drained after {stopped.group(1)} s")
    assert float(stopped.group(1)) < 5, "an empty queue kept a burst worker going"
