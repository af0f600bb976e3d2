"""django_skipqueue.testing in TestCase (jobs never committed), TransactionTestCase and pytest."""

from __future__ import annotations

import pytest
from django.test import TestCase, TransactionTestCase

from django_skipqueue.models import Job
from django_skipqueue.testing import (
    TooManyRuns,
    assert_enqueued,
    assert_not_enqueued,
    enqueued_jobs,
    run_jobs,
    running_jobs,
)
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.tasks import echo, explode

pytest_plugins = ["django_skipqueue.pytest_plugin"]


class RunJobsInTestCase(TestCase):
    """Inside the test's transaction: nothing is committed, the helpers see it all."""

    def test_runs_retries_and_records_like_a_worker(self):
        result = wt.fail_first.enqueue()
        report = run_jobs()
        result.refresh()
        assert (result.status, result.return_value, result.attempts) == ("SUCCESSFUL", 2, 2)
        assert [status for _, status in report.attempts] == ["retry", "succeeded"]
        job = Job.objects.get(pk=result.id)
        assert job.owner is not None and len(job.worker_ids) == 2

    def test_a_transactional_task_commits_its_writes_with_its_completion(self):
        result = wt.slow_record_tx.enqueue(label="tx")
        run_jobs()
        result.refresh()
        assert result.status == "SUCCESSFUL"
        assert LedgerEntry.objects.get().label == "tx"

    def test_failures_end_as_a_worker_ends_them(self):
        result = explode.enqueue("boom")
        assert run_jobs().job_ids == [int(result.id)]
        result.refresh()
        assert result.status == "FAILED"
        assert result.errors[0].exception_class_path == "builtins.ValueError"

    def test_scheduled_jobs_run_when_asked_and_snoozes_keep_the_attempt(self):
        result = wt.snooze_twice.enqueue()
        assert [status for _, status in run_jobs().attempts] == ["snoozed"]
        report = run_jobs(scheduled=True)
        assert [status for _, status in report.attempts] == ["snoozed", "succeeded"]
        job = Job.objects.get(pk=result.id)
        assert (job.status, job.attempts, job.snoozes) == ("succeeded", 1, 2)

    def test_a_job_that_keeps_coming_back_is_stopped(self):
        wt.always_fail.enqueue()
        Job.objects.update(max_attempts=1000)
        with pytest.raises(TooManyRuns, match="3 attempts"):
            run_jobs(max_runs=3)
        assert Job.objects.get().attempts == 3

    def test_running_jobs_runs_what_the_block_enqueued(self):
        with running_jobs() as report:
            echo.enqueue(1)
            assert_enqueued(echo, args=[1], statuses=["ready"])
        assert len(report) == 1
        assert_enqueued(echo, args=[1], count=1, statuses=["succeeded"])


class AssertionsInTestCase(TestCase):
    def test_assert_enqueued_counts_and_compares_arguments_as_json(self):
        echo.enqueue(1, (2, 3), k="v")
        echo.enqueue(1, (2, 3), k="v")
        echo.enqueue(2)
        assert_enqueued(echo, args=[1, [2, 3]], kwargs={"k": "v"}, count=2)
        assert_enqueued(echo, args=(2,))
        assert_not_enqueued(echo, args=[3])
        assert_not_enqueued(explode)
        assert len(enqueued_jobs(echo)) == 3
        with pytest.raises(AssertionError, match="Expected 1 job"):
            assert_enqueued(echo, args=[2], count=1, kwargs={"k": "v"})
        with pytest.raises(AssertionError, match="found 1"):
            assert_not_enqueued(echo, args=[2])


class RunJobsInTransactionTestCase(TransactionTestCase):
    def test_runs_committed_jobs(self):
        result = wt.fail_first.enqueue()
        run_jobs()
        result.refresh()
        assert result.status == "SUCCESSFUL"


def test_the_pytest_fixture(skipqueue):
    result = echo.enqueue(7)
    skipqueue.assert_enqueued(echo, args=[7], count=1)
    skipqueue.run_jobs()
    result.refresh()
    assert result.return_value == {"args": [7], "kwargs": {}}
