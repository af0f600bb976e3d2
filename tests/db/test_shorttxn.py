"""short_transaction(): one real transaction on every backend, rolled back on error."""

from __future__ import annotations

import time

import pytest
from django.db import DatabaseError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from django_skipqueue.db import statements
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
    assert not any("AUTOCOMMIT" in statement for statement in sql), sql
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


# Round trips (MySQL/MariaDB with mysqlclient): statements sent without waiting.


def _update(pk: int, owner: str) -> statements.Run:
    rows = Job.objects.filter(pk=statements.slot_int(0))
    compiled = statements.cached(
        "default",
        ("test-owner",),
        lambda: statements.compile_update(rows, {"owner": statements.slot_str(1)}, 2),
    )
    return statements.Run(compiled, [pk, owner])


@pytest.mark.mysql
def test_start_transaction_goes_out_with_the_first_statement(backend):
    pk = int(noop.enqueue().id)
    statements._local.__dict__.pop("round_trips", None)  # fewer than it keeps, below
    with short_transaction("default"):
        before = _round_trips()
        statements.execute("default", _update(pk, "a").statement, [pk, "a"])
        assert _round_trips() - before == 1  # START TRANSACTION and the UPDATE together
        assert _in_transaction()
    assert Job.objects.get(pk=pk).owner == "a"


@pytest.mark.mysql
def test_a_block_that_sends_nothing_sends_no_start_nor_commit(backend):
    with CaptureQueriesContext(connection) as queries, short_transaction("default"):
        pass
    assert [query["sql"] for query in queries] == []


@pytest.mark.mysql
def test_a_deferred_update_goes_out_with_the_next_statement_and_before_the_commit(backend):
    first, second = (int(noop.enqueue().id) for _ in range(2))
    with CaptureQueriesContext(connection) as queries, short_transaction("default"):
        deferred = statements.defer("default", _update(first, "later"))
        assert queries.captured_queries == []
        [ready] = statements.fetch_values(
            "default",
            statements.compile_select(Job.objects.filter(pk=second).values("pk"), 0),
            [],
        )
        assert ready == second
        assert deferred.result() == 1
        last = statements.defer("default", _update(second, "at commit"))
    sql = [query["sql"].split(" ")[0] for query in queries]
    assert sql == ["START", "UPDATE", "SELECT", "UPDATE", "COMMIT"], sql
    assert last.result() == 1
    assert sorted(Job.objects.values_list("owner", flat=True)) == ["at commit", "later"]


@pytest.mark.mysql
def test_an_error_amid_statements_sent_together_is_raised_and_the_connection_stays_usable(
    backend,
):
    pk = int(noop.enqueue().id)
    broken = statements.Statement("SELECT no_such_column FROM skipqueue_job", (), ())
    with pytest.raises(DatabaseError), short_transaction("default"):
        statements.run_together(
            "default",
            [_update(pk, "undone"), statements.Run(broken, [], rows=True), _update(pk, "too")],
        )
    assert Job.objects.get(pk=pk).owner is None  # rolled back, the answers all read
    with short_transaction("default"):
        statements.execute("default", _update(pk, "b").statement, [pk, "b"])
    assert Job.objects.get(pk=pk).owner == "b"


@pytest.mark.mysql
def test_a_connection_the_server_killed_is_seen_without_a_round_trip(backend):
    connection.ensure_connection()
    assert not statements.dropped_by_server(connection)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute(f"KILL CONNECTION {connection.connection.thread_id()}")
    finally:
        other.close()
    deadline = time.monotonic() + 5
    while not statements.dropped_by_server(connection) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert statements.dropped_by_server(connection)
    connection.close()


def _round_trips() -> int:
    """The round trips this thread's pipelined sends have noted (one per send)."""
    return len(statements._local.__dict__.get("round_trips", {}).get("default", ()))


def _in_transaction() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@in_transaction")
        return bool(cursor.fetchone()[0])


@pytest.mark.mysql
def test_a_connection_killed_inside_the_block_leaves_no_atomic_block_open():
    """An atomic() whose SAVEPOINT meets a dropped connection never runs its __exit__: the
    block's failure must not leave the thread "inside an atomic block" for ever."""
    connection.ensure_connection()
    victim = connection.connection.thread_id()
    killer = connections.create_connection("default")
    try:
        with pytest.raises(DatabaseError), short_transaction("default"):
            Job.objects.exists()  # the transaction has begun
            with killer.cursor() as cursor:
                cursor.execute(f"KILL {int(victim)}")
            with transaction.atomic():
                Job.objects.exists()
    finally:
        killer.close()
    assert not connection.in_atomic_block
    connection.close()
    assert Job.objects.count() == 0, "the thread's next query reconnects and runs"
