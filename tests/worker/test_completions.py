"""Batched completions and compiled statements: one UPDATE per batch, still fenced per row."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_skipqueue import transitions
from django_skipqueue.db import statements
from django_skipqueue.models import Job, JobStatus
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


def claim(backend, count: int, owner: str = "w1") -> list[Job]:
    backend.enqueue_many([(noop, [], {})] * count)
    return Job.objects.claim(["default"], limit=count, owner=owner)


def test_a_batch_of_successes_is_one_update_with_each_jobs_values(backend):
    jobs = claim(backend, 3)
    values = [{"n": 1}, None, ["x", 2.5]]
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        written = transitions.succeed_many(jobs, values)
    assert written == [True, True, True]
    assert sum(q["sql"].lstrip().upper().startswith("UPDATE") for q in queries) == 1
    rows = Job.objects.in_bulk([job.pk for job in jobs])
    for job, value in zip(jobs, values, strict=True):
        row = rows[job.pk]
        assert (row.status, row.return_value, row.worker_ids) == ("succeeded", value, ["w1"])
        assert row.finished_at is not None and row.lease_until is None


def test_a_lost_lease_in_the_batch_is_not_written_and_the_rest_are(backend):
    first, second, third = claim(backend, 3)
    # The second job's lease was taken over: reaped and claimed again by another worker.
    Job.objects.filter(pk=second.pk).update(owner="w2", attempts=2)
    with transaction.atomic():
        written = transitions.succeed_many([first, second, third], [1, 2, 3])
    assert written == [True, False, True]
    taken = Job.objects.get(pk=second.pk)
    assert (taken.status, taken.owner, taken.return_value) == ("claimed", "w2", None)
    assert Job.objects.get(pk=third.pk).return_value == 3


def test_jobs_of_two_owners_are_refused(backend):
    first, second = claim(backend, 2)
    second.owner = "someone-else"
    with pytest.raises(ValueError, match="one owner"):
        transitions.succeed_many([first, second], [None, None])
    assert Job.objects.filter(status=JobStatus.SUCCEEDED).count() == 0


def test_compiled_claims_of_every_size_bind_their_own_values(backend):
    """The cached statements are reused with new values, never with the old ones."""
    backend.enqueue_many([(noop, [], {})] * 6)
    sizes = [len(Job.objects.claim(["default"], limit=n, owner=f"w{n}")) for n in (1, 2, 3, 1)]
    assert sizes == [1, 2, 3, 0]
    owners = sorted(Job.objects.values_list("owner", flat=True))
    assert owners == ["w1", "w2", "w2", "w3", "w3", "w3"]


def test_a_slot_missing_from_the_compiled_statement_is_an_error():
    queryset = Job.objects.filter(owner=statements.slot_str(0))
    with pytest.raises(AssertionError, match=r"Slots \[1\]"):
        statements.compile_select(queryset, 2)


def test_a_batch_with_one_shared_result_uses_no_case_and_keeps_the_fence(backend):
    first, second, third = claim(backend, 3)
    Job.objects.filter(pk=second.pk).update(owner="w2", attempts=2)
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        written = transitions.succeed_many([first, second, third], [None, None, None])
    assert written == [True, False, True]
    update = next(q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("UPDATE"))
    assert "CASE" not in update.upper()
    rows = Job.objects.in_bulk([first.pk, third.pk])
    assert all(row.worker_ids == ["w1"] and row.return_value is None for row in rows.values())


def test_results_equal_in_python_but_not_in_json_are_kept_apart(backend):
    jobs = claim(backend, 3)
    with transaction.atomic():
        transitions.succeed_many(jobs, [1, True, 1.0])
    stored = [Job.objects.get(pk=job.pk).return_value for job in jobs]
    assert [(type(v), v) for v in stored] == [(int, 1), (bool, True), (float, 1.0)]


def test_a_padded_batch_writes_each_job_once_and_counts_it_once(backend):
    """Five jobs run in the statement compiled for eight: the last job's values repeat."""
    jobs = claim(backend, 5)
    Job.objects.filter(pk=jobs[4].pk).update(owner="w2", attempts=2)
    with transaction.atomic():
        written = transitions.succeed_many(jobs, [1, 2, 3, 4, 5])
    assert written == [True, True, True, True, False]
    rows = Job.objects.in_bulk([job.pk for job in jobs])
    assert [rows[job.pk].return_value for job in jobs[:4]] == [1, 2, 3, 4]
    assert (rows[jobs[4].pk].status, rows[jobs[4].pk].return_value) == ("claimed", None)
    store = statements._local.__dict__["statements"]
    keys = {key for (_, key) in store if key[0] == "succeed-many"}
    assert ("succeed-many", 8) in keys and ("succeed-many", 5) not in keys
