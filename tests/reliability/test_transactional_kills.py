"""Transactional enqueue and exactly-once effects while producers and workers are killed.

A producer writes a business row and enqueues its job in one transaction, lingering inside
it, and is killed with SIGKILL again and again (mostly mid-transaction). Workers running the
transactional task are killed too. Afterwards every business row has exactly one job and every
job its business row (no job without its order, no order without its job), and every job's
effect was written exactly once, whatever was re-run.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from django.db.models import Count, Max, Min

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from tests.reliability.audit import audit, job_rows
from tests.reliability.procs import ROOT, Supervisor, kill_quietly, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.slow]

TASK = "tests.reliability.tasks.slow_order"
SECONDS = 15.0


def start_producer(env, tmp_path, start: int, acked) -> subprocess.Popen:
    with (tmp_path / "producer.log").open("a") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.producer", "orders", "--task", TASK,
             "--start", str(start), "--count", "100000", "--linger", "0.02",
             "--acked", str(acked)],
            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


def test_transactional_enqueue_and_effects_survive_kill_9(rel_env, tmp_path, figures):
    env = rel_env(RESTART_BACKOFF_MAX=1.0)
    acked = tmp_path / "acked"
    supervisor = Supervisor(
        env, tmp_path / "runworkers.log", "--processes", "2", "--threads", "4", "--queues",
        "default",
    )  # fmt: skip
    producer_kills = worker_kills = 0
    began = time.monotonic()
    next_worker_kill = began + 2.0
    producer = start_producer(env, tmp_path, 0, acked)
    try:
        round_ = 0
        # Run for SECONDS, and on a loaded machine on until the kills the test needs have
        # landed (a producer that commits slowly is struck less often), within a bound.
        while time.monotonic() - began < SECONDS or (
            (producer_kills < 10 or worker_kills < 3) and time.monotonic() - began < 8 * SECONDS
        ):
            # Strike once this producer is committing orders: most of its time is spent
            # inside a transaction (it lingers there), so most kills land mid-transaction.
            seen = _lines(acked)
            wait_for(lambda seen=seen: _lines(acked) > seen, 60)
            time.sleep(random.uniform(0.05, 0.3))
            if kill_quietly(producer.pid, signal.SIGKILL):
                producer_kills += 1
            producer.wait()
            round_ += 1
            producer = start_producer(env, tmp_path, round_ * 100_000, acked)
            if time.monotonic() >= next_worker_kill and supervisor.workers():
                worker_kills += kill_quietly(random.choice(supervisor.workers()), signal.SIGKILL)
                next_worker_kill = time.monotonic() + 2.0
        producer.send_signal(signal.SIGKILL)
        producer.wait()
        unfinished = Job.objects.filter(status__in=("ready", "scheduled", "claimed"))
        wait_for(lambda: not unfinished.exists(), 120)
    finally:
        kill_quietly(producer.pid, signal.SIGKILL)
        producer.wait()
        supervisor.stop(signum=signal.SIGTERM)

    orders = Counter(
        LedgerEntry.objects.filter(job_id=0, worker="producer").values_list("label", flat=True)
    )
    jobs = Counter(label for (label,) in _job_labels())
    acknowledged = {f"order-{n}" for n in acked.read_text().split()}
    effects = LedgerEntry.objects.exclude(job_id=0)
    killed_owners = set(WorkerProcess.objects.filter(stopped_at__isnull=False).values_list(
        "owner", flat=True))  # fmt: skip
    report = audit(
        job_rows(Job.objects.values_list("id", "status", "attempts", "worker_ids", "errors")),
        effects.values_list("job_id", "attempt", "worker"),
        killed_owners=killed_owners,
        effects_once=True,
    )
    # Auto-increment values of job rows whose transaction was killed after the INSERT and
    # rolled back: each is a job that would have been an orphan without its order.
    # (Ids keep counting across tests: the gaps are measured between this test's first and
    # last job.)
    ids = Job.objects.aggregate(first=Min("id"), last=Max("id"), count=Count("id"))
    rolled_back = ids["last"] - ids["first"] + 1 - ids["count"]
    figures.update(
        producer_kills=producer_kills, worker_kills=worker_kills, orders=len(orders),
        acked=len(acknowledged), job_inserts_rolled_back=rolled_back,
        **report.as_dict(),
    )  # fmt: skip
    assert producer_kills >= 10 and worker_kills >= 3
    assert rolled_back > 0, "no kill landed between the job's INSERT and the COMMIT"
    assert set(orders) == set(jobs), "an order without its job, or a job without its order"
    assert set(orders.values()) == {1} and set(jobs.values()) == {1}
    assert acknowledged <= set(orders), "an acknowledged order was lost"
    assert report.problems == [] and report.succeeded == len(jobs)
    assert report.executions == len(jobs), "each job's effect committed exactly once"


def _lines(path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def _job_labels():
    for kwargs in Job.objects.values_list("kwargs", flat=True):
        yield (kwargs["label"],)
