"""Every path that ends a job gives its flow slot back once, in the same transaction."""

from __future__ import annotations

import time

import pytest

from django_skipqueue import transitions
from django_skipqueue.admin import operations
from django_skipqueue.db.clock import DatabaseNowPlus, read_db_now
from django_skipqueue.exceptions import message_record
from django_skipqueue.flow import admission
from django_skipqueue.flow.status import reason
from django_skipqueue.maintenance.promote import promote
from django_skipqueue.maintenance.reap import reap
from django_skipqueue.models import FlowKey, Job
from tests.support.tasks import apply_event, export_for, sync_each_second, sync_hourly

pytestmark = pytest.mark.django_db

ERROR = message_record(ValueError, "boom")


def jobs_of(task, *args, count: int) -> list[Job]:
    return [Job.objects.get(pk=task.enqueue(*args).id) for _ in range(count)]


def claim_one() -> Job:
    (job,) = Job.objects.claim(["default"], limit=1, owner="w1")
    return job


def running(key_of: Job) -> int:
    return FlowKey.objects.get(key=key_of.flow_key).running


def status(job: Job) -> str:
    return Job.objects.get(pk=job.pk).status


def record(job: Job) -> None:
    """The admin's recorder: not under test."""


def test_a_lost_lease_whose_attempts_are_spent_gives_the_slot_to_the_next_job():
    first, second = jobs_of(export_for.using(max_attempts=1), 1, count=2)
    claim_one()
    Job.objects.filter(pk=first.pk).update(lease_until=DatabaseNowPlus(-5))
    assert reap(runner="r").reclaimed == 1
    assert (status(first), status(second), running(first)) == ("failed", "ready", 1)
    assert not Job.objects.get(pk=first.pk).flow_slot


def test_a_lost_lease_retried_keeps_its_slot():
    first, second = jobs_of(export_for.using(max_attempts=3), 2, count=2)
    claim_one()
    Job.objects.filter(pk=first.pk).update(lease_until=DatabaseNowPlus(-5))
    reap(runner="r")
    job = Job.objects.get(pk=first.pk)
    assert job.status in ("ready", "scheduled") and job.flow_slot
    assert (status(second), running(first)) == ("blocked", 1)


def test_cancelling_a_blocked_job_frees_nothing_and_a_waiting_holder_frees_its_slot():
    first, second, third = jobs_of(export_for, 3, count=3)
    operations.cancel_waiting(Job.objects.filter(pk=second.pk), record, "no")
    assert (status(second), running(first)) == ("cancelled", 1)
    operations.cancel_waiting(Job.objects.filter(pk=first.pk), record, "no")
    assert (status(first), status(third), running(first)) == ("cancelled", "ready", 1)


def test_a_retry_with_backoff_keeps_the_slot_and_is_promoted_ready():
    first, second = jobs_of(export_for.using(max_attempts=3), 4, count=2)
    job = claim_one()
    assert transitions.fail(job, ERROR, retry_in=30)
    Job.objects.filter(pk=first.pk).update(run_after=DatabaseNowPlus(-1))
    promote()
    assert (status(first), status(second), running(first)) == ("ready", "blocked", 1)


def test_an_ordered_key_that_blocks_on_failure_waits_for_the_operator():
    blocking = apply_event.using(ordered_failure="block", max_attempts=1)
    first, second = jobs_of(blocking, "acct", 1, count=2)
    job = claim_one()
    assert transitions.fail(job, ERROR, retry_in=None)
    assert (status(first), status(second), running(first)) == ("failed", "blocked", 1)
    assert Job.objects.get(pk=first.pk).flow_slot  # kept by the failed job
    operations.retry_failed(Job.objects.filter(pk=first.pk), record)
    assert (status(first), status(second)) == ("ready", "blocked")  # runs again, in its place


def test_an_ordered_key_that_skips_runs_the_next_and_a_retry_waits_its_turn():
    first, second = jobs_of(apply_event.using(max_attempts=1), "acct2", 1, count=2)
    job = claim_one()
    assert transitions.fail(job, ERROR, retry_in=None)
    assert (status(first), status(second), running(first)) == ("failed", "ready", 1)
    operations.retry_failed(Job.objects.filter(pk=first.pk), record)
    assert status(first) == "blocked"  # the slot is the second job's now
    (nxt,) = Job.objects.claim(["default"], limit=1, owner="w1")
    assert nxt.pk == second.pk and transitions.succeed(nxt, None)
    assert (status(first), running(first)) == ("ready", 1)  # the oldest waiting: its turn


def test_a_holder_retried_in_a_spent_window_waits_blocked_with_its_slot_until_cancelled():
    first, second = jobs_of(sync_hourly, "api1", count=2)
    assert transitions.fail(claim_one(), ERROR, retry_in=0)
    # Its one start an hour is spent: the retry waits for the next window, holding the slot,
    # so the key's later job still waits behind it.
    job = Job.objects.get(pk=first.pk)
    state = FlowKey.objects.get(key=first.flow_key)
    assert (job.status, job.flow_slot, status(second)) == ("blocked", True, "blocked")
    assert (state.running, state.blocked_holders, state.window_count) == (1, [first.pk], 1)
    assert state.wake_at is not None
    assert "holds one of its key's 1 slot(s); waiting for the next rate window" in reason(job)
    # Cancelled, it gives its slot back and leaves the waiting holders.
    operations.cancel_waiting(Job.objects.filter(pk=first.pk), record, "no")
    job.refresh_from_db()
    state.refresh_from_db()
    assert (job.status, job.flow_slot, state.running, state.blocked_holders) == (
        "cancelled",
        False,
        0,
        [],
    )
    assert status(second) == "blocked"  # a free slot, and the hour's start spent


def test_the_flow_timer_admits_a_waiting_holder_in_the_next_window_before_later_jobs():
    first, second = jobs_of(sync_each_second, "api2", count=2)
    assert transitions.fail(claim_one(), ERROR, retry_in=0)
    state = FlowKey.objects.get(key=first.flow_key)
    if state.blocked_holders:  # the first start's window has not ended yet
        assert (status(first), state.blocked_holders) == ("blocked", [first.pk])
        # (Not wait_for: it would close this test's connection, inside its transaction.)
        while read_db_now("default") < state.wake_at:
            time.sleep(0.05)
        assert admission.wake_due("default") == 1
        state.refresh_from_db()
    # Admitted by the rate alone, in its place: it kept the slot, the later job waits.
    job = Job.objects.get(pk=first.pk)
    assert (job.status, job.flow_slot, status(second)) == ("ready", True, "blocked")
    assert (state.running, state.blocked_holders, state.window_jobs) == (1, [], [first.pk])
