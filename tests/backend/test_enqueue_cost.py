"""What one ``enqueue()`` costs the database: one INSERT and nothing else (issue 23).

A plain task's job is one INSERT in autocommit (no SELECT, no savepoint, no transaction of
its own) and the same INSERT inside the caller's ``atomic()``. On MySQL/MariaDB that INSERT
is written by ``bulkinsert.insert_row`` rather than ``Model.save()``: it must store the row
``save()`` would, and step aside while Job has ``pre_save``/``post_save`` receivers.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_skipqueue import wakeup
from django_skipqueue.enqueue import build_job
from django_skipqueue.models import Job
from tests.support.tasks import echo, noop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def worker_list_kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep the wake-up's list of worker addresses for the whole test.

    The wake-up reads that list (one SELECT) at most every ADDRESS_CACHE_SECONDS per process:
    a slow machine must not make the second enqueue of a test the one that reads it again.
    """
    monkeypatch.setattr(wakeup, "ADDRESS_CACHE_SECONDS", 3600.0)
    wakeup.forget_addresses()
    noop.enqueue()  # the first enqueue of the process reads the list
    yield
    wakeup.forget_addresses()


def _statements(block: Any) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        block()
    return [query["sql"] for query in queries.captured_queries]


def _is_job_insert(sql: str) -> bool:
    table = connection.ops.quote_name(Job._meta.db_table)
    return sql.startswith(f"INSERT INTO {table} ")


def test_plain_enqueue_in_autocommit_is_one_insert():
    sent = _statements(lambda: noop.enqueue(1, name="x"))
    assert len(sent) == 1, sent
    assert _is_job_insert(sent[0]), sent


def test_plain_enqueue_inside_atomic_is_one_insert_that_commits_with_it():
    class Boom(Exception):
        pass

    with transaction.atomic():
        sent = _statements(noop.enqueue)
    assert len(sent) == 1 and _is_job_insert(sent[0]), sent
    assert Job.objects.count() == 2  # the fixture's and this one

    with pytest.raises(Boom), transaction.atomic():
        noop.enqueue()
        raise Boom
    assert Job.objects.count() == 2


def _server_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Com\\_%%'")
        return {name: int(value) for name, value in cursor.fetchall()}


def _sent_by_server(block: Any) -> dict[str, int]:
    """The server's own count of the session's statements while ``block`` ran, by kind.

    It also sees what bypasses Django's cursor (pipelined statements, the driver's own
    autocommit switches). The reading's own SHOW STATUS is left out.
    """
    before = _server_counts()
    block()
    after = _server_counts()
    changed = {name: after[name] - before[name] for name in after if after[name] != before[name]}
    changed.pop("Com_show_status", None)
    return changed


@pytest.mark.mysql
def test_the_server_sees_one_insert_and_nothing_else():
    assert _sent_by_server(noop.enqueue) == {"Com_insert": 1}

    def in_atomic() -> None:
        with transaction.atomic():
            assert _sent_by_server(noop.enqueue) == {"Com_insert": 1}

    in_atomic()


@pytest.mark.mysql
def test_the_single_insert_stores_the_row_that_save_stores():
    later = timezone.now() + timedelta(hours=1)
    calls = [
        (noop, (), {}),
        (echo.using(queue_name="high", priority=-5), [1, "two", {"x": [None]}], {"k": 1.5}),
        (echo.using(run_after=later, max_attempts=3, timeout=9, lease=30), ["%s"], {}),
    ]
    for task, args, kwargs in calls:
        fast = Job.objects.get(pk=task.enqueue(*args, **kwargs).id)
        job = build_job(task, args, kwargs, now=fast.enqueued_at)
        job.save(force_insert=True)
        slow = Job.objects.get(pk=job.pk)
        assert _columns(fast) == _columns(slow)


def _columns(job: Job) -> dict[str, Any]:
    fields = Job._meta.concrete_fields
    return {f.attname: getattr(job, f.attname) for f in fields if f.attname != "id"}


@pytest.mark.mysql
def test_the_returned_job_is_the_saved_row():
    from django_skipqueue.compat import task_backends
    from django_skipqueue.enqueue import insert_job

    backend = task_backends["default"]
    job, created = insert_job(build_job(echo, [7], {}), backend.database)
    assert created and not job._state.adding and job._state.db == backend.database
    with CaptureQueriesContext(connection) as queries:
        generated = (job.priority_rank, job.active_key, job.waiting_key)
    assert not queries.captured_queries  # set on the instance, not read back
    stored = Job.objects.get(pk=job.pk)
    assert generated == (stored.priority_rank, stored.active_key, stored.waiting_key)
    assert _columns(job) == _columns(stored)


def test_save_receivers_on_job_still_hear_every_enqueue():
    heard: list[tuple[int, bool]] = []

    def receiver(sender: type[Job], instance: Job, created: bool, **kwargs: Any) -> None:
        heard.append((instance.pk, created))

    post_save.connect(receiver, sender=Job, weak=False)
    try:
        result = noop.enqueue()
    finally:
        post_save.disconnect(receiver, sender=Job)
    assert heard == [(int(result.id), True)]
