"""Acceptance: an ordered key runs its jobs one at a time in enqueue order, retries included."""

from __future__ import annotations

import subprocess
from collections import defaultdict

import pytest

from django_skipqueue.models import FlowKey, Job
from testproject.demo.models import FlowLedgerEntry
from tests.flow.ledger import intervals, most_at_once
from tests.support.scale import scaled
from tests.support.workers import Runworkers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]

KEYS = 20
#: 1000 on MariaDB, 300 on PostgreSQL (tests/support/scale.py): 15 jobs per key, 43 retried.
JOBS = scaled(1000, 300)
ENQUEUERS = 4
#: Every seventh job fails its first attempt and is retried after a short backoff.
ENQUEUE = """
from tests.support.flow_tasks import in_order
for n in range({part}, {jobs}, {parts}):
    in_order.enqueue(f"a{{n % {keys}}}", n, 0.005, n % 7 == 3)
"""


def test_each_key_runs_in_enqueue_order_one_at_a_time(child_env, manage_py, tmp_path):
    workers = Runworkers(
        manage_py, child_env, tmp_path / "ordered.log",
        "--processes", "4", "--threads", "4", "--queues", "default",
    )  # fmt: skip
    try:
        # Several processes enqueue at once, while the workers already run.
        enqueuers = [
            subprocess.Popen(
                [*manage_py, "shell", "-c", ENQUEUE.format(
                    part=part, jobs=JOBS, parts=ENQUEUERS, keys=KEYS
                )],
                env=child_env,
            )
            for part in range(ENQUEUERS)
        ]  # fmt: skip
        assert all(enqueuer.wait(120) == 0 for enqueuer in enqueuers)
        from tests.support.workers import wait_for

        wait_for(
            lambda: Job.objects.filter(status="succeeded").count() == JOBS, timeout=120,
            what="every job succeeded",
        )  # fmt: skip
    finally:
        workers.stop()

    planned = {n for n in range(JOBS) if n % 7 == 3}
    # Any other attempt names its cause in the job's errors (a lease lost, a worker died).
    unplanned = [
        (job.pk, [error["exception_class_path"] for error in job.errors])
        for job in Job.objects.filter(attempts__gt=1)
        if job.args[1] not in planned
    ]
    trouble = [
        line
        for line in workers.log().splitlines()
        if any(word in line for word in ("lost", "exited", "failed", "error", "Traceback"))
    ]
    assert unplanned == [], trouble[:20]
    assert Job.objects.filter(attempts=2).count() == len(planned)
    executions = defaultdict(list)
    for job_id, attempt in FlowLedgerEntry.objects.order_by("started_at", "id").values_list(
        "job_id", "attempt"
    ):
        executions[job_id].append(attempt)
    by_key = defaultdict(list)
    for job in Job.objects.order_by("pk"):
        by_key[job.flow_key].append(job.pk)
    assert len(by_key) == KEYS
    per_key = intervals()
    for key, runs in per_key.items():
        assert most_at_once(runs) == 1, key
        # The executions, by start: each job once (twice in a row when retried), by id.
        started = [job_id for _, _, job_id in runs]
        enqueued = by_key[f"tests.support.flow_tasks.in_order:account:{key}"]
        assert list(dict.fromkeys(started)) == enqueued, key
        assert all(executions[job_id] in ([1], [1, 2]) for job_id in enqueued)
        assert len(started) == sum(len(executions[job_id]) for job_id in enqueued)
    assert set(FlowKey.objects.values_list("running", flat=True)) == {0}
