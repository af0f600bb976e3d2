"""The retry policy of a task, each branch run by a real ``runworkers --burst``: retry_on,
discard_on, a custom backoff (its delays measured between attempts), and Snooze (the attempt
kept, the snoozes bounded)."""

from __future__ import annotations

import itertools

import pytest

from django_skipqueue.models import Job
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.workers import Runworkers

pytestmark = pytest.mark.django_db(transaction=True)


def drain(manage_py, child_env, tmp_path) -> str:
    workers = Runworkers(
        manage_py, child_env, tmp_path / "workers.log", "--burst", "--processes", "1"
    )
    try:
        assert workers.wait(timeout=120) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    return workers.log()


def ledger(job_id: int | str) -> list[LedgerEntry]:
    return list(LedgerEntry.objects.filter(job_id=int(job_id)).order_by("pk"))


def error_classes(job: Job) -> list[str]:
    return [error["exception_class_path"].rpartition(".")[2] for error in job.errors]


def test_retry_on_retries_those_exceptions_and_fails_on_the_others(manage_py, child_env, tmp_path):
    result = wt.retry_only_value_errors.enqueue()
    drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.max_attempts) == ("failed", 3, 5)
    assert error_classes(job) == ["ValueError", "ValueError", "KeyError"]
    assert [entry.attempt for entry in ledger(job.pk)] == [1, 2, 3]


def test_discard_on_fails_at_once_even_within_retry_on(manage_py, child_env, tmp_path):
    discarded = wt.discard_lookup_errors.enqueue("key")
    retried = wt.discard_lookup_errors.using(priority=-1).enqueue("value")
    drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=discarded.id)
    assert (job.status, job.attempts, error_classes(job)) == ("failed", 1, ["KeyError"])
    assert len(ledger(job.pk)) == 1
    other = Job.objects.get(pk=retried.id)
    assert (other.status, other.attempts) == ("failed", 5), "ValueError: retried to the end"


def test_a_custom_backoff_sets_each_delay_and_none_ends_the_retries(
    manage_py, child_env, tmp_path
):
    result = wt.custom_backoff.enqueue()
    drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.max_attempts) == ("failed", 3, 10)
    times = [entry.created_at for entry in ledger(job.pk)]
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(times)]
    # The delay runs from the recorded failure; promotion adds up to PROMOTE_INTERVAL (1 s)
    # and a loaded machine some more: a generous upper margin, a strict lower one.
    assert 1.5 <= gaps[0] < 1.5 + 4, gaps
    assert 3.0 <= gaps[1] < 3.0 + 4, gaps


def test_snooze_runs_again_later_without_spending_an_attempt(manage_py, child_env, tmp_path):
    result = wt.snooze_twice.enqueue()
    log = drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.max_attempts, job.snoozes) == ("succeeded", 1, 1, 2)
    assert job.return_value == 1
    assert job.errors == [], "a snooze is not an error"
    entries = ledger(job.pk)
    assert [entry.attempt for entry in entries] == [1, 1, 1]
    gaps = [(b.created_at - a.created_at).total_seconds() for a, b in itertools.pairwise(entries)]
    assert all(gap >= 0.5 for gap in gaps), gaps
    assert f"job={job.pk} " in log and "status=snoozed" in log


def test_snoozes_are_bounded_then_the_job_fails(manage_py, child_env, tmp_path):
    result = wt.snooze_forever.enqueue()
    drain(manage_py, child_env, tmp_path)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.attempts, job.snoozes) == ("failed", 1, 2)
    assert [entry.attempt for entry in ledger(job.pk)] == [1, 1, 1]
    [error] = job.errors
    assert error["exception_class_path"] == "django_skipqueue.exceptions.SnoozeLimitReached"
    assert "after 2 snoozes" in error["traceback"]
