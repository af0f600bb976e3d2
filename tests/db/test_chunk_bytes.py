"""Bulks are cut by bytes as well as by rows: no statement passes ``max_allowed_packet``.

A hundred calls of some 200 KB each (under the 256 KB payload limit, but a 25 MB INSERT once
quoted) used to fail with 1153 and insert nothing. Every path that writes many rows at once
is tried on the real MariaDB/MySQL (16 MiB packets by default), and every row is read back
byte for byte. Quotes and backslashes in the payloads double in size when quoted.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from django.db import connection

from django_skipqueue.db import packets
from django_skipqueue.models import Job
from django_skipqueue.outbox import Message, publish_many
from django_skipqueue.outbox.models import OutboxMessage
from tests.support.tasks import echo, sync_account

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

CALLS = 100


def _big(n: int) -> str:
    """About 200 KB of JSON, 250 KB once quoted in SQL; distinct per ``n``."""
    return f"{n}:" + "x" * 150_000 + "'\"\\" * 10_000


def _digests(values, separators: tuple[str, str] = (", ", ": ")) -> list[str]:
    """The SHA-256 of each value's JSON text, as the bulk sends it."""
    texts = (json.dumps(v, separators=separators) for v in values)
    return [hashlib.sha256(text.encode()).hexdigest() for text in texts]


def _stored(table: str, column: str) -> list[str]:
    """The SHA-256 of each row's stored text, in the server: the bytes it keeps."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT SHA2({column}, 256) FROM {table} ORDER BY id")
        return [digest for (digest,) in cursor.fetchall()]


def _stored_args() -> list[str]:
    return _stored("skipqueue_job", "args")


def test_the_statements_would_pass_the_packet_limit_uncut():
    budget = packets.packet_budget(connection)
    assert budget is not None
    assert CALLS * len(json.dumps([_big(0)])) > budget, "the test must need more than one INSERT"


def test_a_bulk_sent_ahead_of_big_calls_is_stored_whole(backend):
    results = backend.enqueue_many([(echo, [_big(n)], {}) for n in range(CALLS)])
    assert len(results) == CALLS
    assert _stored_args() == _digests([[_big(n)] for n in range(CALLS)])
    assert [int(r.id) for r in results] == list(
        Job.objects.order_by("pk").values_list("pk", flat=True)
    )


def test_a_bulk_without_sending_ahead_is_stored_whole(backend):
    # A watched cursor takes the serial path (insert_rows).
    with connection.execute_wrapper(lambda execute, *args: execute(*args)):
        results = backend.enqueue_many([(echo, [_big(n)], {"n": n}) for n in range(CALLS)])
    assert len(results) == CALLS
    stored = Job.objects.order_by("pk").values_list("kwargs", flat=True)
    assert list(stored) == [{"n": n} for n in range(CALLS)]
    assert _stored_args() == _digests([[_big(n)] for n in range(CALLS)])


def test_a_keyed_bulk_of_big_calls_is_stored_whole_and_reports_its_duplicates(backend):
    calls = [(sync_account, [n, _big(n)], {}) for n in range(CALLS)]
    assert not backend.enqueue_many(calls).duplicates
    again = backend.enqueue_many([*calls[:3], (sync_account, [CALLS, _big(CALLS)], {})])
    assert sorted(again.duplicates) == [0, 1, 2]
    assert _stored_args() == _digests([[n, _big(n)] for n in range(CALLS + 1)])


def test_publish_many_of_big_payloads_is_stored_whole():
    payloads = [{"n": n, "body": _big(n)} for n in range(CALLS)]
    rows = publish_many(
        [Message("orders", p, key=f"k{n}", headers={"h": "é'\\"}) for n, p in enumerate(payloads)]
    )
    assert len(rows) == CALLS
    table = OutboxMessage._meta.db_table
    assert _stored(table, "payload") == _digests(payloads, (",", ":"))  # the compact encoder
    headers = OutboxMessage.objects.values_list("headers", flat=True)
    assert all(h == {"h": "é'\\"} for h in headers)


def test_a_bulk_is_all_or_none_when_a_later_statement_fails(backend):
    calls = [(echo, [_big(n)], {}) for n in range(CALLS)]
    calls.append((echo.using(queue_name="emails"), ["x" * 10], {}))
    with connection.cursor() as cursor:  # the last part's queue cannot be stored
        cursor.execute(
            "ALTER TABLE skipqueue_job ADD CONSTRAINT skipqueue_test_no_emails "
            "CHECK (queue_name <> 'emails')"
        )
    try:
        with pytest.raises(Exception, match="skipqueue_test_no_emails"):
            backend.enqueue_many(calls)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE skipqueue_job DROP CONSTRAINT skipqueue_test_no_emails")
    assert Job.objects.count() == 0


def test_cut_keeps_each_run_under_the_budget_and_a_large_row_alone():
    assert packets.cut([], 10) == []
    assert packets.cut([4, 4, 4, 20, 1], 10) == [
        range(0, 2),
        range(2, 3),
        range(3, 4),
        range(4, 5),
    ]
    assert packets.cut([5, 5], 10) == [range(0, 2)]
