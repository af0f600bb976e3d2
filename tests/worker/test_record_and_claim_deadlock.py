"""A deadlock in the transaction that records finished jobs and claims the next ones.

The worker writes its finished jobs' outcomes and claims in one short transaction. A deadlock
anywhere in it rolls all of it back, so all of it must run again: the claim's own retry must
not run the claim once more on its own. It did: that claim then committed by itself (the
server had left the transaction), the outcomes written before it were lost, and the jobs it
claimed on the first try were held by the worker without its knowledge, unrenewed, until the
reaper took them back one attempt later (an ordered key waited for that the whole lease).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections, transaction

from django_skipqueue.models import Job, JobStatus
from django_skipqueue.worker.executor import RETRY, Outcome
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from testproject.demo.models import LedgerEntry
from tests.support.tasks import noop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

OWNER = "deadlock-worker"


def test_a_deadlock_on_the_record_and_claim_transaction_runs_all_of_it_again(
    backend, close_thread_connections
):
    # A claim of three compiles its statements, as a running worker has long done.
    backend.enqueue_many([(noop, [], {})] * 3)
    assert len(Job.objects.claim_from("default", limit=3, owner="another-worker")) == 3
    backend.enqueue_many([(noop, [], {})] * 2)
    failed, succeeded = Job.objects.claim(["default"], limit=2, owner=OWNER)
    backend.enqueue_many([(noop, [], {})] * 3)
    worker = Worker(WorkerOptions(queues=("default",), threads=4, wakeup=False), owner=OWNER)
    error = {"exception_class_path": "builtins.ValueError", "traceback": "boom"}
    # The retried job's UPDATE runs at once (its row stays locked until the commit); the
    # success's UPDATE goes out with the claim's first statement.
    worker.jobs.unrecorded = [
        Outcome(worker.jobs.hold(failed), RETRY, error=error, retry_in=60.0),
        Outcome(worker.jobs.hold(succeeded), JobStatus.SUCCEEDED),
    ]
    other_locks_failed = threading.Event()
    locked_success = threading.Event()
    errors: list[BaseException] = []

    def other_transaction() -> None:
        """Lock the success's row, then the retried job's: the worker waits for the first."""
        try:
            with transaction.atomic():
                list(Job.objects.select_for_update().filter(pk=succeeded.pk))
                # InnoDB rolls back the transaction that wrote less: the worker's.
                heavy = [LedgerEntry(job_id=1, attempt=1, worker="other") for _ in range(50)]
                LedgerEntry.objects.bulk_create(heavy)
                locked_success.set()
                assert other_locks_failed.wait(20)
                list(Job.objects.select_for_update().filter(pk=failed.pk))
        except BaseException as raised:
            errors.append(raised)
        finally:
            connections.close_all()

    claim_from = worker.claimer.claim_from
    claims = []

    def claim_when_the_other_waits(queue_name: str, limit: int) -> list[Job]:
        claims.append(limit)
        if len(claims) == 1:  # the retried job's row is locked by now
            assert locked_success.wait(20)
            other_locks_failed.set()
            time.sleep(0.5)  # its lock request reaches the server and waits
        return claim_from(queue_name, limit)

    worker.claimer.claim_from = claim_when_the_other_waits  # type: ignore[method-assign]
    thread = threading.Thread(target=other_transaction)
    thread.start()
    try:
        claimed = worker._record(claim_from="default", wanted=3)
    finally:
        other_locks_failed.set()
        thread.join()
        worker.waker.close()
        worker.executor.shutdown()

    assert errors == [], "the other transaction was not the deadlock's victim"
    assert len(claims) == 2, "the whole transaction ran again"
    # Every job the worker holds in the database is one it knows of.
    held = set(Job.objects.held_by(OWNER).values_list("pk", flat=True))
    assert held == {job.pk for job in claimed}
    assert len(claimed) == 3
    assert Job.objects.get(pk=failed.pk).status == JobStatus.SCHEDULED
    assert Job.objects.get(pk=succeeded.pk).status == JobStatus.SUCCEEDED
    assert {job.attempts for job in Job.objects.filter(pk__in=held)} == {1}
