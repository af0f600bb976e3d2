"""The reaper against late completions, at full speed: one of them wins each job, never both.

tests/maintenance/test_reaper.py places the race deterministically (a completion in flight is
skipped; a completion that lands after the reaper read the row is kept). Here 2,000 expired
jobs are completed by two "late workers" through the worker's own batched path while two reapers
reclaim them, all at once; every job must end with exactly one winner, and the losers must
have written nothing.
"""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connections

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.maintenance import reap as reaper
from django_skipqueue.models import Job
from django_skipqueue.worker import recording as outcomes
from django_skipqueue.worker.executor import Outcome, Running
from tests.support.bulkfill import insert_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]

JOBS = 2000


def test_completion_or_reap_wins_each_job_never_both(close_thread_connections, figures):
    insert_jobs(JOBS)
    claimed = Job.objects.claim(["default"], limit=JOBS, owner="late-worker", lease=600)
    Job.objects.update(lease_until=DatabaseNowPlus(-1))  # every lease has just expired
    random.shuffle(claimed)
    halves = [claimed[: JOBS // 2], claimed[JOBS // 2 :]]
    completions: list[Outcome] = []
    reaps: list[reaper.ReapResult] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def complete(jobs: list[Job]) -> None:
        start.wait()
        for begin in range(0, len(jobs), 20):
            batch = [
                Outcome(Running(job), "succeeded", job.pk) for job in jobs[begin : begin + 20]
            ]
            outcomes.record(batch, "default")
            completions.extend(batch)

    def reap(name: str) -> None:
        start.wait()
        reaps.append(reaper.reap("default", batch=25, runner=name))

    def guarded(work, *args) -> None:
        try:
            work(*args)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=guarded, args=(complete, half)) for half in halves]
    threads += [threading.Thread(target=guarded, args=(reap, name)) for name in ("r1", "r2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    won = {outcome.job.pk for outcome in completions if not outcome.lost}
    rows = {job.pk: job for job in Job.objects.all()}
    reaped = {pk for pk, job in rows.items() if job.errors}
    reclaimed = sum(result.reclaimed for result in reaps)
    figures.update(jobs=JOBS, completion_won=len(won), reap_won=len(reaped),
                   reaper_fenced=sum(result.fenced for result in reaps))  # fmt: skip
    assert won.isdisjoint(reaped), "a job was both completed and reaped"
    assert won | reaped == set(rows), "a job was neither"
    assert reclaimed == len(reaped)
    for pk in won:
        job = rows[pk]
        assert (job.status, job.return_value, job.errors) == ("succeeded", pk, [])
    for pk in reaped:
        job = rows[pk]
        assert job.status in ("ready", "scheduled") and job.return_value is None
        assert [e["exception_class_path"].rpartition(".")[2] for e in job.errors] == [
            "LeaseExpired"
        ]
        assert job.worker_ids == ["late-worker"] and job.owner is None
