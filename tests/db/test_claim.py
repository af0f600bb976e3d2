"""claim(): SKIP LOCKED with real connections, exclusivity under contention, order, fencing."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_skipqueue import transitions
from django_skipqueue.models import Job, JobStatus
from tests.support.tasks import echo, noop

pytestmark = pytest.mark.django_db(transaction=True)


def enqueue_noops(backend, count: int) -> list[int]:
    return [int(r.id) for r in backend.enqueue_many([(noop, [], {})] * count)]


@pytest.mark.skip_locked
def test_a_row_locked_by_another_connection_is_skipped(backend, close_thread_connections):
    first, second = enqueue_noops(backend, 2)
    locked, release = threading.Event(), threading.Event()

    def hold_lock_on_first() -> None:
        with transaction.atomic():
            list(Job.objects.select_for_update().filter(pk=first))
            locked.set()
            release.wait(10)
        connections.close_all()

    holder = threading.Thread(target=hold_lock_on_first)
    holder.start()
    try:
        assert locked.wait(10)
        claimed = Job.objects.claim(["default"], limit=2, owner="w1")
        assert [job.pk for job in claimed] == [second]
    finally:
        release.set()
        holder.join()
    assert [job.pk for job in Job.objects.claim(["default"], limit=2, owner="w2")] == [first]


def test_claim_marks_jobs_claimed_with_owner_lease_and_attempt(backend):
    [job_id] = enqueue_noops(backend, 1)
    [job] = Job.objects.claim(["default"], limit=5, owner="worker-a", lease=30)
    assert (job.pk, job.status, job.owner, job.attempts) == (job_id, "claimed", "worker-a", 1)
    remaining = job.lease_until - timezone.now()
    assert timedelta(seconds=25) < remaining < timedelta(seconds=35)
    assert job.started_at is not None and job.last_attempted_at is not None
    assert Job.objects.claim(["default"], limit=5, owner="worker-b") == []


def test_claimed_rows_read_as_the_orm_reads_them_with_a_fresh_list_or_dict_each(backend):
    """The claim's compiled read decodes JSON columns itself: the same values, not shared."""
    echo.enqueue([1, {"a": None}], key="text")
    enqueue_noops(backend, 2)
    Job.objects.filter(pk=Job.objects.order_by("-pk")[0].pk).update(errors=[{"type": "E"}])
    claimed = Job.objects.claim(["default"], limit=3, owner="w")
    fields = [field.attname for field in Job._meta.concrete_fields]
    by_orm = {job.pk: job for job in Job.objects.filter(pk__in=[job.pk for job in claimed])}
    for job in claimed:
        assert [getattr(job, f) for f in fields] == [getattr(by_orm[job.pk], f) for f in fields]
    first, second, third = claimed
    assert (first.args, first.kwargs) == ([[1, {"a": None}]], {"key": "text"})
    assert (second.kwargs, second.errors, second.return_value) == ({}, [], None)
    assert third.errors == [{"type": "E"}]
    second.errors.append("mine")
    second.kwargs["mine"] = 1
    assert (third.kwargs, second.worker_ids) == ({}, [])
    assert second.worker_ids is not third.worker_ids and second.args is not third.args


def test_claim_without_lease_uses_each_jobs_own_lease(backend):
    noop.using(lease=600).enqueue()
    [job] = Job.objects.claim(["default"], limit=1, owner="w")
    assert timedelta(seconds=590) < job.lease_until - timezone.now() < timedelta(seconds=610)


def test_claim_order_is_priority_then_age_and_queues_in_the_given_order():
    low = noop.using(priority=-5).enqueue()
    high = noop.using(priority=50).enqueue()
    plain_1 = noop.enqueue()
    plain_2 = noop.enqueue()
    other_queue = noop.using(queue_name="high", priority=100).enqueue()
    claimed = Job.objects.claim(["default", "high"], limit=10, owner="w")
    assert [str(j.pk) for j in claimed[:4]] == [high.id, plain_1.id, plain_2.id, low.id]
    assert str(claimed[4].pk) == other_queue.id
    assert [str(j.pk) for j in Job.objects.claim(["high"], limit=1, owner="w")] == []


def test_limit_is_filled_across_queues_in_order():
    for _ in range(3):
        noop.enqueue()
        noop.using(queue_name="emails").enqueue()
    claimed = Job.objects.claim(["emails", "default"], limit=4, owner="w")
    assert [j.queue_name for j in claimed] == ["emails", "emails", "emails", "default"]


def test_scheduled_jobs_are_not_claimed():
    noop.using(run_after=timezone.now() + timedelta(minutes=5)).enqueue()
    assert Job.objects.claim(["default"], limit=10, owner="w") == []


@pytest.mark.skip_locked
def test_eight_claimers_claim_twenty_thousand_jobs_exactly_once(backend, close_thread_connections):
    enqueue_noops(backend, 20_000)
    deadlocks_before = innodb_deadlocks()
    claimed: list[list[int]] = [[] for _ in range(8)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def claimer(index: int) -> None:
        try:
            barrier.wait()
            while batch := Job.objects.claim(["default"], limit=25, owner=f"w{index}"):
                claimed[index] += [job.pk for job in batch]
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    every_claim = [pk for batch in claimed for pk in batch]
    assert len(every_claim) == 20_000
    assert len(set(every_claim)) == 20_000
    assert Job.objects.claimed().count() == 20_000
    assert sum(1 for batch in claimed if batch) == 8, "every claimer got work"
    assert innodb_deadlocks() == deadlocks_before


def innodb_deadlocks() -> int | None:
    """The server's deadlock counter (MariaDB/MySQL), or None elsewhere."""
    if connection.vendor != "mysql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        row = cursor.fetchone()
    return int(row[1]) if row else None


def test_completion_by_an_owner_whose_lease_was_taken_over_changes_nothing():
    echo.enqueue("x")
    [stale] = Job.objects.claim(["default"], limit=1, owner="stale-worker")
    # The lease runs out and the job is reclaimed (what the reaper does), then re-claimed.
    Job.objects.filter(pk=stale.pk).update(status=JobStatus.READY, owner=None)
    [current] = Job.objects.claim(["default"], limit=1, owner="current-worker")
    assert current.attempts == 2

    assert transitions.succeed(stale, "stale result") is False
    error = {"exception_class_path": "builtins.ValueError", "traceback": ""}
    assert transitions.fail(stale, error, retry_in=None) is False
    assert transitions.release(stale) is False
    row = Job.objects.get(pk=stale.pk)
    assert (row.status, row.owner, row.attempts, row.return_value) == (
        "claimed",
        "current-worker",
        2,
        None,
    )
    assert transitions.succeed(current, "result") is True
    row.refresh_from_db()
    assert (row.status, row.return_value) == ("succeeded", "result")
    assert row.worker_ids == ["current-worker"]


def test_release_gives_the_attempt_back():
    noop.enqueue()
    [job] = Job.objects.claim(["default"], limit=1, owner="w")
    assert transitions.release(job) is True
    job.refresh_from_db()
    assert (job.status, job.attempts, job.owner, job.started_at) == ("ready", 0, None, None)


def test_failure_with_retry_schedules_the_job_and_keeps_the_error():
    noop.using(max_attempts=3).enqueue()
    [job] = Job.objects.claim(["default"], limit=1, owner="w")
    error = {"exception_class_path": "builtins.ValueError", "traceback": "Traceback..."}
    assert transitions.fail(job, error, retry_in=60) is True
    job.refresh_from_db()
    assert job.status == "scheduled"
    assert timedelta(seconds=55) < job.run_after - timezone.now() < timedelta(seconds=65)
    assert job.errors == [error] and job.worker_ids == ["w"]


@pytest.mark.skip_locked
def test_a_claim_reads_its_rows_before_it_commits():
    """No other owner can take a claim over before its rows are read: they are still locked.

    The rows used to be read after the commit, and a claimer paused in between (a stall,
    SIGSTOP) could find a row the reaper had taken back and another worker claimed. The read
    now goes out with the mark, in the claim's transaction (one round trip for both).
    """
    job_id = int(noop.enqueue().id)
    reads: list[tuple[bool, str]] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        reads.append((connection.get_autocommit(), sql))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch), CaptureQueriesContext(connection) as captured:
        [job] = Job.objects.claim(["default"], limit=1, owner="w")
    assert (job.pk, job.owner, job.attempts, job.status) == (job_id, "w", 1, JobStatus.CLAIMED)
    sent = [query["sql"] for query in captured.captured_queries] or [sql for _, sql in reads]
    payload = [i for i, sql in enumerate(sent) if "args" in sql and sql.startswith("SELECT")]
    assert payload, sent
    if connection.vendor == "mysql":
        assert payload[0] < sent.index("COMMIT"), sent
    else:
        assert all(not autocommit for autocommit, sql in reads if "args" in sql), reads


def test_claims_of_sizes_one_to_sixty_four_compile_a_few_statements(backend):
    """LIMIT is a parameter and id lists are padded: eleven sizes serve batches of 1..64."""
    from django_skipqueue.db import statements

    store = statements._local.__dict__.setdefault("statements", {})
    store.clear()
    enqueue_noops(backend, sum(range(1, 65)))
    taken: list[int] = []
    for size in range(1, 65):
        claimed = Job.objects.claim(["default"], limit=size, owner=f"w{size}")
        assert len(claimed) == size
        assert all(job.owner == f"w{size}" for job in claimed)
        taken += [job.pk for job in claimed]
    assert len(set(taken)) == len(taken) == sum(range(1, 65))
    assert Job.objects.filter(status=JobStatus.CLAIMED).count() == len(taken)
    kinds: dict[str, set[object]] = {}
    for _, key in store:
        name, *shape = key if isinstance(key, tuple) else (key,)
        kinds.setdefault(name, set()).add(tuple(shape))
    sizes = {1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64}
    assert kinds["claim-lock"] == {()}
    assert {shape[0] for shape in kinds["claim-mark"]} == sizes
    assert {shape[0] for shape in kinds["claim-fetch"]} == sizes


def test_padded_sizes_and_lists():
    from django_skipqueue.db import statements

    sizes = [statements.padded_size(n) for n in (1, 2, 3, 5, 8, 9, 16, 17, 64, 65)]
    assert sizes == [1, 2, 4, 8, 8, 16, 16, 24, 64, 72]
    assert statements.padded([7, 9], 4) == [7, 9, 9, 9]
    with pytest.raises(ValueError):
        statements.padded_size(0)


def test_a_claimed_job_equals_one_loaded_by_the_orm_and_saves_as_one(backend):
    """Claimed rows become instances without Model.__init__: the same fields and state."""
    enqueue_noops(backend, 3)
    claimed = Job.objects.claim(["default"], limit=3, owner="w")
    loaded = Job.objects.in_bulk([job.pk for job in claimed])
    for job in claimed:
        orm = loaded[job.pk]
        assert job.__dict__.keys() == orm.__dict__.keys()
        for field in Job._meta.concrete_fields:
            assert getattr(job, field.attname) == getattr(orm, field.attname), field.attname
        assert (job._state.db, job._state.adding) == ("default", False)
        assert job == orm and hash(job) == hash(orm)
    first, second, _ = claimed
    first.priority = 5
    first.save(update_fields=["priority"])
    assert Job.objects.get(pk=first.pk).priority == 5
    second.save()  # a full save is an UPDATE of the row, not an INSERT
    assert Job.objects.count() == 3
    assert Job.objects.get(pk=second.pk).owner == "w"
    second.refresh_from_db()
    assert second.status == JobStatus.CLAIMED


def test_receivers_of_model_init_signals_see_every_claimed_job(backend):
    from django.db.models.signals import post_init

    seen: list[int] = []

    def receiver(sender: type, instance: Job, **kwargs: Any) -> None:
        seen.append(instance.pk)

    enqueue_noops(backend, 2)
    post_init.connect(receiver, sender=Job)
    try:
        claimed = Job.objects.claim(["default"], limit=2, owner="w")
    finally:
        post_init.disconnect(receiver, sender=Job)
    assert seen == [job.pk for job in claimed] and all(job._state.db for job in claimed)
