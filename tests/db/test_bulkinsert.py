"""The MySQL bulk INSERT writes exactly what the ORM would, and returns the right keys."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_skipqueue.db.bulkinsert import insert_fields, insert_rows
from django_skipqueue.models import Job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]


def stored(pk: int) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM skipqueue_job WHERE id = %s", [pk])
        names = [column[0] for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))


def job(**fields) -> Job:
    base = {"task_path": "tests.support.tasks.echo", "enqueued_at": timezone.now()}
    return Job(**(base | fields))


def test_rows_match_what_the_orm_stores_column_for_column():
    later = timezone.now() + timedelta(hours=1)
    variants = [
        {"args": [1, "100% sure", {"k": None}], "kwargs": {"x": [1.5, True]}},
        {"queue_name": "emails", "priority": -7, "status": "scheduled", "run_after": later},
        {"idempotency_key": "key-'quoted'\\", "max_attempts": 3, "timeout_seconds": 30},
        {"args": ["é ☃ \x00"], "errors": [{"exception_class_path": "x.Y", "traceback": "%s"}]},
    ]
    by_orm = [job(**fields) for fields in variants]
    for each in by_orm:
        each.save(force_insert=True)
    expected = [stored(each.pk) for each in by_orm]
    Job.objects.all().delete()  # frees the idempotency key for the second insert
    fast = [
        job(**fields | {"enqueued_at": orm.enqueued_at})
        for fields, orm in zip(variants, by_orm, strict=True)
    ]
    insert_rows(fast, "default")
    for want, mine in zip(expected, fast, strict=True):
        got = stored(mine.pk)
        assert got.pop("id") == mine.pk
        want.pop("id")
        assert got == want


def test_each_job_gets_its_own_key_in_order():
    jobs = [job(args=[n]) for n in range(1500)]
    insert_rows(jobs[:1000], "default")
    insert_rows(jobs[1000:], "default")
    for each in jobs:
        assert Job.objects.get(pk=each.pk).args == each.args
    assert all(not each._state.adding for each in jobs)


def test_every_stored_column_is_written():
    names = {field.column for field in insert_fields()}
    assert "id" not in names and "priority_rank" not in names and "active_key" not in names
    assert {"args", "kwargs", "status", "enqueued_at", "worker_ids"} <= names


def test_values_that_compare_equal_but_differ_in_json_stay_apart():
    """[1] == [True] == [1.0] in Python, yet each must be stored as its own JSON."""
    jobs = [job(args=[1]), job(args=[True]), job(args=[1.0]), job(args=[1])]
    insert_rows(jobs, "default")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT args FROM skipqueue_job WHERE id IN %s ORDER BY id", [[j.pk for j in jobs]]
        )
        stored_args = [row[0] for row in cursor.fetchall()]
    assert stored_args == ["[1]", "[true]", "[1.0]", "[1]"]


def test_a_column_the_same_in_every_row_is_written_once_and_read_back_in_each():
    jobs = [job(queue_name="emails", args=[n], priority=3) for n in range(5)]
    insert_rows(jobs, "default")
    rows = Job.objects.filter(pk__in=[j.pk for j in jobs]).order_by("pk")
    assert [(r.queue_name, r.priority, r.args) for r in rows] == [
        ("emails", 3, [n]) for n in range(5)
    ]


def test_columns_at_their_default_in_every_row_are_left_out_and_read_back():
    """A plain job's INSERT names no column that is NULL or at its database default in every
    row; what it stores is the ORM's row."""
    by_orm = job(args=[1])
    by_orm.save(force_insert=True)
    expected = stored(by_orm.pk)
    fast = [job(args=[n], enqueued_at=by_orm.enqueued_at) for n in (1, 2)]
    with CaptureQueriesContext(connection) as queries:
        insert_rows(fast, "default")
    insert = next(query["sql"] for query in queries if query["sql"].startswith("INSERT"))
    head = insert.split(" VALUES ")[0]
    for left_out in ("`finished_at`", "`owner`", "`run_after`", "`return_value`", "`snoozes`"):
        assert left_out not in head
    assert "`args`" in head and "`enqueued_at`" in head
    got = stored(fast[0].pk)
    assert got.pop("id") == fast[0].pk
    expected.pop("id")
    assert got == expected


def test_a_column_null_in_some_rows_only_is_written_in_each():
    later = timezone.now() + timedelta(hours=1)
    jobs = [job(status="scheduled", run_after=later), job()]
    insert_rows(jobs, "default")
    assert [Job.objects.get(pk=j.pk).run_after for j in jobs] == [later, None]


def test_a_column_off_its_database_default_is_written():
    jobs = [job(snoozes=2, key_statuses=3), job(snoozes=2, key_statuses=3)]
    insert_rows(jobs, "default")
    stored_values = Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list(
        "snoozes", "key_statuses"
    )
    assert list(stored_values) == [(2, 3), (2, 3)]
