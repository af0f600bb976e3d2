"""Bulk enqueue with each chunk built while the server inserts the one before (SentInsert)."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from django_skipqueue import enqueue as enqueue_module
from django_skipqueue.db import bulkinsert
from django_skipqueue.exceptions import InvalidPayload
from django_skipqueue.models import Job
from tests.support.tasks import echo, noop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

CHUNK = enqueue_module.BULK_BATCH_SIZE


def _fields_of(result):
    return {each.name: getattr(result, each.name) for each in dataclasses.fields(result)}


@pytest.fixture
def sends(monkeypatch):
    """Count the chunks that go through SentInsert (the pipelined path)."""
    sent = []
    real = bulkinsert.SentInsert.__init__

    def counting(self, jobs, using):
        sent.append(len(jobs))
        real(self, jobs, using)

    monkeypatch.setattr(bulkinsert.SentInsert, "__init__", counting)
    return sent


def test_chunks_are_sent_ahead_and_each_result_describes_its_own_job(backend, sends):
    tasks = [echo, echo.using(queue_name="emails", priority=7), noop]
    calls = [(tasks[n % 3], [n], {"n": n}) for n in range(2 * CHUNK + 500)]
    results = backend.enqueue_many(calls)
    assert sends == [CHUNK, CHUNK, 500]
    stored = dict(Job.objects.values_list("pk", "args"))
    assert [stored[int(r.id)] for r in results] == [[n] for n in range(len(calls))]
    for index in (0, 1, 2, CHUNK - 1, CHUNK, CHUNK + 1, len(calls) - 1):
        assert _fields_of(results[index]) == _fields_of(backend.get_result(results[index].id))
        assert results[index].task == calls[index][0]


def test_without_returning_the_ids_come_from_the_insert(backend, sends, monkeypatch):
    """MySQL has no INSERT ... RETURNING: each chunk's ids start at its insert id."""
    monkeypatch.setattr(type(connection.features), "can_return_rows_from_bulk_insert", False)
    noop.enqueue()
    results = backend.enqueue_many([(echo, [n], {}) for n in range(CHUNK + 10)])
    assert sends == [CHUNK, 10]
    stored = dict(Job.objects.values_list("pk", "args"))
    assert [stored[int(r.id)] for r in results] == [[n] for n in range(CHUNK + 10)]


def test_a_bad_call_in_a_later_chunk_leaves_no_job(backend, sends):
    calls = [(echo, [n], {}) for n in range(2 * CHUNK)] + [(echo, [object()], {})]
    with pytest.raises(InvalidPayload):
        backend.enqueue_many(calls)
    assert sends == [CHUNK, CHUNK]  # two chunks had gone to the server
    assert Job.objects.count() == 0
    assert len(backend.enqueue_many([(echo, [1], {})])) == 1  # the connection still works


def test_inside_the_callers_transaction_only_the_bulk_rolls_back(backend, sends):
    calls = [(echo, [n], {}) for n in range(CHUNK + 5)] + [(echo, [object()], {})]
    with transaction.atomic():
        kept = noop.enqueue()
        with pytest.raises(InvalidPayload):
            backend.enqueue_many(calls)
    assert list(Job.objects.values_list("pk", flat=True)) == [int(kept.id)]


def test_an_error_of_the_server_is_djangos_and_rolls_the_bulk_back(backend, sends, monkeypatch):
    """A row the server refuses (a CHECK) in the second chunk: IntegrityError, nothing kept."""
    real = enqueue_module.build_jobs
    built = []

    def second_chunk_refused(calls, **options):
        jobs = real(calls, **options)
        built.append(jobs)
        if len(built) == 2:
            jobs[3].priority = 500  # -100 to 100: a CHECK of the table (error 4025)
        return jobs

    monkeypatch.setattr(enqueue_module, "build_jobs", second_chunk_refused)
    with pytest.raises(IntegrityError):
        backend.enqueue_many([(echo, [n], {}) for n in range(CHUNK + 20)])
    assert sends == [CHUNK, 20]
    assert Job.objects.count() == 0
    monkeypatch.setattr(enqueue_module, "build_jobs", real)
    assert len(backend.enqueue_many([(echo, [1], {})])) == 1


def test_a_watched_cursor_gets_the_serial_path_and_sees_every_insert(backend, sends):
    with CaptureQueriesContext(connection) as queries:
        backend.enqueue_many([(echo, [n], {}) for n in range(CHUNK + 1)])
    assert sends == []
    inserts = [q for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 2
    assert Job.objects.count() == CHUNK + 1


def test_keyed_calls_are_not_sent_ahead(backend, sends):
    backend.enqueue_many([(echo.using(idempotency_key="k"), [1], {}), (echo, [2], {})])
    assert sends == []
    assert Job.objects.count() == 2


def test_quotes_percents_and_non_ascii_arrive_as_written(backend, sends):
    """Values that differ per row go as quoted parameters, shared ones as one literal: both
    must survive the statement's own formatting ('%' is its marker)."""
    calls = [(echo, [f"100% sure é ☃ '{n}' \\ %s"], {"p": "50%", "q": "it's"}) for n in range(5)]
    results = backend.enqueue_many(calls)
    assert sends == [5]
    stored = Job.objects.filter(pk__in=[int(r.id) for r in results]).order_by("pk")
    assert [(job.args, job.kwargs) for job in stored] == [(a, kw) for _, a, kw in calls]
