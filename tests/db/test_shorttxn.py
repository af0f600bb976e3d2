"""short_transaction(): one real transaction on every backend, rolled back on error."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_skipqueue.db.statements import short_transaction
from django_skipqueue.models import Job
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


def mark(pk: int, owner: str) -> None:
    Job.objects.filter(pk=pk).update(owner=owner)


def test_an_error_rolls_the_whole_block_back(backend):
    pk = int(noop.enqueue().id)
    with pytest.raises(RuntimeError), short_transaction("default"):
        mark(pk, "inside")
        raise RuntimeError("boom")
    assert Job.objects.get(pk=pk).owner is None


def test_the_block_commits_as_one(backend):
    first, second = (int(noop.enqueue().id) for _ in range(2))
    with short_transaction("default"):
        mark(first, "a")
        mark(second, "b")
    assert sorted(Job.objects.values_list("owner", flat=True)) == ["a", "b"]


def test_inside_an_atomic_block_it_is_a_savepoint_of_the_callers_transaction(backend):
    pk = int(noop.enqueue().id)
    with transaction.atomic():
        with pytest.raises(RuntimeError), short_transaction("default"):
            mark(pk, "inner")
            raise RuntimeError("boom")
        assert Job.objects.get(pk=pk).owner is None
        mark(pk, "outer")
    assert Job.objects.get(pk=pk).owner == "outer"


@pytest.mark.mysql
def test_on_mysql_it_sends_no_autocommit_switches(backend):
    pk = int(noop.enqueue().id)
    with CaptureQueriesContext(connection) as queries, short_transaction("default"):
        mark(pk, "x")
    sql = [query["sql"].upper() for query in queries]
    assert sql[0] == "START TRANSACTION" and sql[-1] == "COMMIT", sql
    assert connection.get_autocommit()


def test_atomic_inside_the_block_is_a_savepoint_and_commits_nothing_early(backend):
    first, second = (int(noop.enqueue().id) for _ in range(2))
    with pytest.raises(RuntimeError), short_transaction("default"):
        with transaction.atomic():
            mark(first, "nested")
        with pytest.raises(ValueError), transaction.atomic():
            mark(second, "undone")
            raise ValueError("inner only")
        assert Job.objects.get(pk=second).owner is None
        raise RuntimeError("roll back everything")
    assert list(Job.objects.values_list("owner", flat=True)) == [None, None]
    assert connection.get_autocommit()


def test_a_claim_inside_the_block_commits_with_it(backend):
    pk = int(noop.enqueue().id)
    with pytest.raises(RuntimeError), short_transaction("default"):
        assert [job.pk for job in Job.objects.claim(["default"], limit=1, owner="w")] == [pk]
        raise RuntimeError("roll back the claim")
    assert Job.objects.get(pk=pk).status == "ready"
