"""kill -9 of a random worker process every few seconds while a backlog drains.

Nothing may be lost; every duplicate execution must belong to an attempt whose owner the test
killed (the supervisor records ``WorkerDied`` naming it), on a lower attempt than the one that
finished the job. For a transactional task the duplicates roll back: one effect per job.
"""

from __future__ import annotations

import random
import signal
import threading
import time

import pytest
from django.db import connections

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from testproject.demo.tasks import record
from tests.reliability.audit import audit, job_rows
from tests.reliability.procs import Supervisor, kill_quietly
from tests.support import worker_tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.mysql,
    pytest.mark.slow,
]

SCENARIOS = {
    # task, jobs, one effect per job
    "record": (record, 10_000, False),
    "transactional": (worker_tasks.slow_record_tx, 4_000, True),
}


class Killer(threading.Thread):
    """SIGKILL a random worker of ``supervisor`` every ``every`` seconds, at most ``limit``."""

    def __init__(self, supervisor: Supervisor, every: tuple[float, float], limit: int) -> None:
        super().__init__(daemon=True)
        self.supervisor, self.every, self.limit = supervisor, every, limit
        self.killed: list[int] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while len(self.killed) < self.limit:
            if self.stopping.wait(random.uniform(*self.every)):
                return
            workers = self.supervisor.workers()
            if workers:
                victim = random.choice(workers)
                if kill_quietly(victim, signal.SIGKILL):
                    self.killed.append(victim)

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def enqueue(backend, task, count: int) -> list[int]:
    ids: list[int] = []
    for start in range(0, count, 1000):
        calls = [(task, [], {"label": "kill"})] * min(1000, count - start)
        ids += [int(result.id) for result in backend.enqueue_many(calls)]
    return ids


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_random_kill_9_loses_nothing_and_explains_every_duplicate(
    scenario, backend, rel_env, tmp_path, figures
):
    task, count, effects_once = SCENARIOS[scenario]
    ids = enqueue(backend, task, count)
    env = rel_env(RESTART_BACKOFF_MAX=2.0)
    began = time.monotonic()
    supervisor = Supervisor(
        env, tmp_path / "runworkers.log",
        "--processes", "3", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    killer = Killer(supervisor, every=(0.5, 1.5), limit=12)
    try:
        supervisor.wait_for_workers(3)
        killer.start()
        code = supervisor.wait(timeout=300)
    finally:
        killer.stop()
        supervisor.stop()
    elapsed = time.monotonic() - began
    connections.close_all()
    assert code == 0, supervisor.log()[-3000:]
    assert len(killer.killed) >= 3, "the run was too short to kill anything"

    killed_owners = set(
        WorkerProcess.objects.filter(pid__in=killer.killed).values_list("owner", flat=True)
    )
    jobs = job_rows(Job.objects.values_list("id", "status", "attempts", "worker_ids", "errors"))
    ledger = LedgerEntry.objects.values_list("job_id", "attempt", "worker")
    result = audit(
        jobs, ledger, expected_ids=ids, killed_owners=killed_owners, effects_once=effects_once
    )
    figures.update(
        scenario=scenario, jobs=count, kills=len(killer.killed), seconds=round(elapsed, 1),
        **result.as_dict(),
    )  # fmt: skip
    assert result.problems == []
    assert (result.lost, result.succeeded) == (0, count)
    assert not Job.objects.claimed().exists()
    if effects_once:
        assert result.executions == count and result.duplicates == 0
    else:
        assert result.executions == count + result.duplicates
        assert set(result.causes) <= {"WorkerDied"}
