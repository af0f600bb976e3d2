"""Enqueue: transactional inserts, bulk inserts, idempotency keys and refused input."""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from django_skipqueue import enqueue as enqueue_module
from django_skipqueue.compat import InvalidTask, TaskResultStatus
from django_skipqueue.exceptions import (
    InvalidPayload,
    InvalidQueueName,
    InvalidTaskOption,
    PayloadTooLarge,
)
from django_skipqueue.models import Job, JobStatus
from django_skipqueue.tasks import task
from tests.support.tasks import echo, noop

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue_inserts_a_ready_job_with_its_options():
    result = echo.using(queue_name="high").enqueue(1, "two", flag=True)
    job = Job.objects.get(pk=result.id)
    assert (job.status, job.queue_name, job.priority, job.task_path) == (
        JobStatus.READY,
        "high",
        10,
        "tests.support.tasks.echo",
    )
    assert (job.args, job.kwargs) == ([1, "two"], {"flag": True})
    assert result.status == TaskResultStatus.READY
    assert result.enqueued_at == job.enqueued_at


def test_rollback_leaves_no_job_and_commit_leaves_exactly_one():
    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        noop.enqueue()
        raise Boom
    assert Job.objects.count() == 0

    with transaction.atomic():
        result = noop.enqueue()
        # Not visible to another connection before the caller's transaction commits.
        assert _count_from_another_connection() == 0
    assert _count_from_another_connection() == 1
    assert Job.objects.get().pk == int(result.id)


def _count_from_another_connection() -> int:
    counts: list[int] = []

    def count() -> None:
        counts.append(Job.objects.count())
        connections.close_all()

    thread = threading.Thread(target=count)
    thread.start()
    thread.join()
    return counts[0]


def test_future_run_after_is_scheduled_and_past_run_after_is_ready():
    later = noop.using(run_after=timezone.now() + timedelta(hours=1)).enqueue()
    earlier = noop.using(run_after=timezone.now() - timedelta(seconds=1)).enqueue()
    assert Job.objects.get(pk=later.id).status == JobStatus.SCHEDULED
    assert Job.objects.get(pk=earlier.id).status == JobStatus.READY
    assert later.status == TaskResultStatus.READY  # django.tasks has no "scheduled"


def test_bulk_enqueue_returns_results_with_ids_in_order(backend):
    calls = [(echo, [n], {}) for n in range(2500)]
    results = backend.enqueue_many(calls)
    ids = [int(r.id) for r in results]
    assert len(set(ids)) == 2500
    stored = dict(Job.objects.values_list("pk", "args"))
    assert [stored[i] for i in ids] == [[n] for n in range(2500)]


#: The columns a one-by-one enqueue and a bulk enqueue must write alike.
COMPARED = (
    "queue_name",
    "priority",
    "status",
    "run_after",
    "task_path",
    "args",
    "kwargs",
    "max_attempts",
    "lease_seconds",
    "timeout_seconds",
    "attempts",
    "errors",
    "worker_ids",
    "idempotency_key",
    "owner",
    "lease_until",
)


def _stored(ids):
    rows = Job.objects.filter(pk__in=ids).values("pk", *COMPARED)
    by_pk = {row.pop("pk"): row for row in rows}
    return [by_pk[i] for i in ids]


def test_bulk_enqueue_writes_each_task_like_single_enqueues(backend):
    """A bulk copies one job per task: every row must still match a one-by-one enqueue."""
    later = timezone.now() + timedelta(hours=1)
    tasks = [
        echo,
        echo.using(queue_name="emails", priority=7),
        noop.using(run_after=later),
        echo.using(max_attempts=2, lease=30, timeout=9),
    ]
    calls = [(tasks[n % 4], [n], {"n": {"deep": [n]}}) for n in range(40)]
    singles = [int(t.enqueue(*a, **kw).id) for t, a, kw in calls]
    bulk = [int(r.id) for r in backend.enqueue_many(calls)]
    assert _stored(bulk) == _stored(singles)
    assert {row["queue_name"] for row in _stored(bulk)} == {"default", "emails"}


def _fields_of(result):
    return {each.name: getattr(result, each.name) for each in dataclasses.fields(result)}


def test_bulk_enqueue_results_are_what_get_result_reads_back(backend):
    """Results after a task's first are copied from it: each must still describe its own job."""
    later = timezone.now() + timedelta(hours=1)
    tasks = [echo, echo.using(queue_name="emails", priority=7), noop.using(run_after=later)]
    calls = [(tasks[n % 3], [n], {"n": {"deep": [n]}}) for n in range(30)]
    results = backend.enqueue_many(calls)
    for (called, args, kwargs), result in zip(calls, results, strict=True):
        assert _fields_of(result) == _fields_of(backend.get_result(result.id))
        assert (result.args, result.kwargs, result.task) == (args, kwargs, called)
    results[0].errors.append("x")
    results[0].worker_ids.append("w")
    assert all(r.errors == [] and r.worker_ids == [] for r in results[1:])
    assert len({id(r.args) for r in results}) == len(results)


def test_bulk_enqueued_jobs_share_no_list_or_dict(backend):
    from django_skipqueue import enqueue

    jobs = enqueue.build_jobs(
        [(echo, [1], {}), (echo, [2], {})],
        config=enqueue.get_settings(),
        now=timezone.now(),
    )
    jobs[0].errors.append({"boom": 1})
    jobs[0].worker_ids.append("w")
    assert jobs[1].errors == [] and jobs[1].worker_ids == []
    assert jobs[0].args == [1] and jobs[1].args == [2]
    assert jobs[0]._state is not jobs[1]._state and jobs[1]._state.adding


def test_bulk_enqueue_builds_every_job_for_post_init_receivers(backend):
    from django.db.models.signals import post_init

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Job)
    try:
        backend.enqueue_many([(echo, [n], {}) for n in range(5)])
    finally:
        post_init.disconnect(receiver, sender=Job)
    assert sorted(job.args[0] for job in seen if job.args) == [0, 1, 2, 3, 4]


@pytest.mark.mysql
@pytest.mark.parametrize("sent_ahead", [True, False], ids=["sent-ahead", "serial"])
def test_bulk_enqueue_reads_ids_back_without_returning(backend, monkeypatch, sent_ahead):
    """The MySQL path (no INSERT ... RETURNING) derives ids from LAST_INSERT_ID()."""
    from django_skipqueue.db import bulkinsert

    monkeypatch.setattr(type(connection.features), "can_return_rows_from_bulk_insert", False)
    if not sent_ahead:
        monkeypatch.setattr(bulkinsert, "can_send_ahead", lambda using: False)
    noop.enqueue()  # the ids of the batch must not start at 1
    results = backend.enqueue_many([(echo, [n], {}) for n in range(1500)])
    stored = dict(Job.objects.values_list("pk", "args"))
    assert [stored[int(r.id)] for r in results] == [[n] for n in range(1500)]
    assert enqueue_module.BULK_BATCH_SIZE < 1500  # more than one batch was read back


def test_idempotency_key_returns_the_existing_job():
    first = echo.using(idempotency_key="order-42").enqueue(1)
    second = echo.using(idempotency_key="order-42").enqueue(2)
    assert first.id == second.id
    assert second.args == [1]
    assert Job.objects.count() == 1


def test_idempotency_key_is_free_again_once_the_job_failed():
    first = echo.using(idempotency_key="k").enqueue(1)
    Job.objects.filter(pk=first.id).update(status=JobStatus.FAILED)
    second = echo.using(idempotency_key="k").enqueue(2)
    assert first.id != second.id


@pytest.mark.skip_locked
def test_sixteen_concurrent_enqueues_with_one_key_create_one_job(close_thread_connections):
    barrier = threading.Barrier(16)
    ids: list[str] = []
    errors: list[BaseException] = []

    def enqueue() -> None:
        try:
            barrier.wait()
            ids.append(echo.using(idempotency_key="same").enqueue("x").id)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=enqueue) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Job.objects.filter(idempotency_key="same").count() == 1
    assert set(ids) == {str(Job.objects.get().pk)}


def _local_function() -> None:
    pass


BAD_INPUT = [
    ("not JSON", lambda: echo.enqueue(datetime(2026, 1, 1)), InvalidPayload, "not JSON"),
    ("NaN", lambda: echo.enqueue(float("nan")), InvalidPayload, "JSON cannot"),
    ("int key", lambda: echo.enqueue({1: "a"}), InvalidPayload, "keys must be strings"),
    ("bytes", lambda: echo.enqueue(b"raw"), InvalidPayload, "bytes"),
    ("too large", lambda: echo.enqueue("x" * 300_000), PayloadTooLarge, "byte limit"),
    ("unknown queue", lambda: echo.using(queue_name="nope").enqueue(), InvalidTask, "'nope'"),
    ("bad queue name", lambda: echo.using(queue_name="a b").enqueue(), InvalidQueueName, "a b"),
    ("priority", lambda: echo.using(priority=101).enqueue(), InvalidTask, "priority"),
    (
        "naive run_after",
        lambda: noop.using(run_after=datetime(2030, 1, 1)).enqueue(),
        InvalidTask,
        "aware",
    ),
    ("local task", lambda: task()(lambda: None), InvalidTask, "module level"),
    ("max_attempts", lambda: noop.using(max_attempts=0).enqueue(), InvalidTaskOption, "1 to"),
    ("timeout", lambda: noop.using(timeout="5").enqueue(), InvalidTaskOption, "timeout"),
    ("key", lambda: noop.using(idempotency_key="").enqueue(), InvalidTaskOption, "1 to 191"),
    # The worker reads these two from the decorated task: a per-call value would be lost.
    ("per-call backoff", lambda: noop.using(retry_backoff=5), InvalidTaskOption, "decorator"),
    ("per-call transactional", lambda: noop.using(transactional=True), InvalidTaskOption, "@task"),
]


@pytest.mark.parametrize(
    ("call", "exception", "message"),
    [case[1:] for case in BAD_INPUT],
    ids=[case[0] for case in BAD_INPUT],
)
def test_bad_input_raises_a_specific_error_and_inserts_nothing(call, exception, message):
    noop.enqueue()
    with pytest.raises(exception, match=message):
        call()
    assert Job.objects.count() == 1


def test_bulk_enqueue_with_one_bad_call_inserts_nothing(backend):
    calls = [(echo, [n], {}) for n in range(10)] + [(echo, [object()], {})]
    with pytest.raises(InvalidPayload):
        backend.enqueue_many(calls)
    assert Job.objects.count() == 0


def test_payload_limit_is_a_setting(settings):
    settings.SKIPQUEUE_MAX_PAYLOAD_BYTES = 100
    echo.enqueue("x" * 50)
    with pytest.raises(PayloadTooLarge, match="100 byte limit"):
        echo.enqueue("x" * 200)
    assert Job.objects.count() == 1
