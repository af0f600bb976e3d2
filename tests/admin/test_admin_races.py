"""Admin actions racing real workers on real row locks: the state guard is read under the lock."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections, transaction

from django_skipqueue.admin import operations
from django_skipqueue.models import Job, JobStatus
from tests.support.admin import make_job

pytestmark = [pytest.mark.skip_locked, pytest.mark.django_db(transaction=True)]


def claim_in_another_transaction(job: Job, locked: threading.Event, hold: float) -> None:
    """Claim ``job`` on another connection and commit ``hold`` seconds after locking it."""
    try:
        with transaction.atomic():
            [pk] = Job.objects.claimable(job.queue_name)[:1]
            Job.objects.filter(pk=pk).update(status=JobStatus.CLAIMED, owner="racer", attempts=1)
            locked.set()
            time.sleep(hold)
    finally:
        connections.close_all()


def test_cancel_waits_for_a_claim_in_flight_and_leaves_the_claimed_job_alone(
    close_thread_connections,
):
    job = make_job(JobStatus.READY)
    locked = threading.Event()
    worker = threading.Thread(target=claim_in_another_transaction, args=(job, locked, 0.5))
    worker.start()
    try:
        assert locked.wait(10)
        # The candidate read sees the committed "ready"; the lock waits for the claim to commit
        # and then reads "claimed", which fails the guard.
        outcome = operations.cancel_waiting(Job.objects.all(), lambda jobs: None, "test")
    finally:
        worker.join()
    job.refresh_from_db()
    assert (outcome.changed, job.status, job.owner, job.errors) == (0, "claimed", "racer", [])


def test_a_claim_skips_a_job_the_admin_is_cancelling(close_thread_connections):
    """While an operator's chunk holds its lock, claims skip the job instead of waiting."""
    job = make_job(JobStatus.READY)
    chunk_locked, claimed = threading.Event(), []

    def record(jobs: list[Job]) -> None:
        chunk_locked.set()
        time.sleep(0.3)  # the chunk's transaction is still open here

    def claim_meanwhile() -> None:
        try:
            assert chunk_locked.wait(10)
            claimed.extend(Job.objects.claim(["default"], limit=1, owner="w"))
        finally:
            connections.close_all()

    claimer = threading.Thread(target=claim_meanwhile)
    claimer.start()
    outcome = operations.cancel_waiting(Job.objects.all(), record, "test")
    claimer.join()
    job.refresh_from_db()
    assert (outcome.changed, claimed, job.status) == (1, [], "cancelled")
