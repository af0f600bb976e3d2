"""A batch of 5,000 jobs and a chain of 5 steps while worker processes are killed (SIGKILL).

Real runworkers processes on MariaDB; a thread kills a random worker every second or so and
the supervisor replaces it and takes back its jobs. The callbacks and the steps are
transactional tasks: each execution writes a ledger row that commits with its completion, so
one ledger row per job proves one committed run.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

import pytest
from django.db import connections
from django.db.models import Max

from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus
from django_skipqueue.workflows import batch, chain, step
from django_skipqueue.workflows.models import Batch
from testproject.demo.models import LedgerEntry
from tests.reliability.procs import Supervisor, child_env
from tests.reliability.test_kill_random import Killer
from tests.support.workers import wait_for
from tests.workflows.tasks import add_once, callback_once, part

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]
CALLBACK = "tests.workflows.tasks.callback_once"
JOBS = 5_000


@pytest.fixture(autouse=True)
def no_supervisor_left() -> object:
    yield
    Supervisor.stop_all()


def supervise(test_database_url: str, tmp_path, processes: int, threads: int) -> Supervisor:
    env = child_env(test_database_url, RESTART_BACKOFF_MAX=1.0)
    args = ("--processes", str(processes), "--threads", str(threads), "--queues", "default")
    return Supervisor(env, tmp_path / "runworkers.log", *args)


def run_until(supervisor: Supervisor, killer: Killer, done, timeout: float) -> float:
    began = time.monotonic()
    killer.start()
    try:
        wait_for(done, timeout, what="the workflow's end")
    finally:
        killer.stop()
        supervisor.stop()
        connections.close_all()
    return time.monotonic() - began


def test_a_batch_of_5000_with_retries_and_kills_fires_each_callback_once(
    test_database_url, backend, tmp_path
):
    # 10 ms a job: 3 x 4 workers take some seconds, so the kills land while the batch runs (with
    # no-op jobs and claiming ahead the batch ended before the third kill); short enough that
    # claiming ahead stays on, and is killed too.
    calls = [(part, [n], {"flaky": n % 10 == 0, "pause": 0.01}) for n in range(JOBS)]
    with batch(on_success=callback_once, on_finish=callback_once, on_failure=callback_once,
               callback_kwargs={"label": "batch"}) as opened:  # fmt: skip
        for start in range(0, JOBS, 1000):
            backend.enqueue_many(calls[start : start + 1000])
    supervisor = supervise(test_database_url, tmp_path, processes=3, threads=4)
    supervisor.wait_for_workers(3)
    killer = Killer(supervisor, every=(0.5, 1.5), limit=10)
    finished = Job.objects.filter(task_path=CALLBACK, status=JobStatus.SUCCEEDED)
    seconds = run_until(supervisor, killer, lambda: finished.count() >= 2, 300)
    time.sleep(1)  # a third callback, had one been enqueued, would show now

    row = Batch.objects.get(pk=opened.id)
    members = Job.objects.filter(batch_id=opened.id)
    statuses = Counter(members.values_list("status", flat=True))
    print(f"batch: {JOBS} jobs in {seconds:.1f} s, kills={len(killer.killed)}, {statuses}")
    assert len(killer.killed) >= 3, "the run was too short to kill anything"
    assert statuses == {JobStatus.SUCCEEDED: JOBS}
    assert members.filter(attempts__gte=2).count() >= JOBS // 10, "the flaky ones retried"
    assert (row.size, row.succeeded, row.failed, row.cancelled) == (JOBS, JOBS, 0, 0)
    callbacks = list(Job.objects.filter(task_path=CALLBACK).order_by("pk"))
    assert [job.pk for job in callbacks] == [row.success_job_id, row.finish_job_id]
    assert row.failure_job_id is None, "nothing failed for good"
    ledger = Counter(LedgerEntry.objects.filter(label="batch").values_list("job_id", flat=True))
    assert ledger == {job.pk: 1 for job in callbacks}, "one committed run per callback"
    last_ended = members.aggregate(last=Max("finished_at"))["last"]
    for job in callbacks:
        assert job.started_at >= last_ended, "a callback started before the last job ended"
        seen = job.return_value
        assert (seen["size"], seen["succeeded"], seen["failed"], seen["unfinished"]) == (
            JOBS, JOBS, 0, 0,
        )  # fmt: skip


def test_a_chain_of_5_steps_under_kills_runs_each_step_once_after_its_predecessor(
    test_database_url, tmp_path
):
    steps = [step(add_once, *([1] if i == 0 else []), 10**i, seconds=0.6) for i in range(5)]
    row = chain(*steps, on_success=callback_once, callback_kwargs={"label": "chain"})
    supervisor = supervise(test_database_url, tmp_path, processes=2, threads=1)
    supervisor.wait_for_workers(2)
    killer = Killer(supervisor, every=(0.4, 1.0), limit=6)
    finished = Job.objects.filter(task_path=CALLBACK, status=JobStatus.SUCCEEDED)
    seconds = run_until(supervisor, killer, finished.exists, 240)

    steps = list(Job.objects.filter(batch_id=row.pk).order_by("pk"))
    print(f"chain: 5 steps in {seconds:.1f} s, kills={len(killer.killed)}, "
          f"attempts={[s.attempts for s in steps]}")  # fmt: skip
    assert len(killer.killed) >= 2, "the run was too short to kill anything"
    assert [s.status for s in steps] == [JobStatus.SUCCEEDED] * 5
    assert [s.return_value for s in steps] == [2, 12, 112, 1112, 11112]
    for before, after in itertools.pairwise(steps):
        assert after.args[0] == before.return_value, "a step without its predecessor's value"
        assert after.enqueued_at >= before.finished_at, "a step enqueued before its predecessor"
    ledger = Counter(LedgerEntry.objects.values_list("job_id", flat=True))
    assert all(ledger[s.pk] == 1 for s in steps), f"a step committed twice: {ledger}"
    chain_row = Batch.objects.get(pk=row.pk)
    assert (chain_row.succeeded, chain_row.steps) == (5, [])
    assert Job.objects.filter(task_path=CALLBACK).count() == 1
