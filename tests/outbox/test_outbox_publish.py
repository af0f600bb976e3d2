"""publish() and publish_many(): checked before the INSERT, in the caller's transaction."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_skipqueue.exceptions import (
    DuplicateMessage,
    InvalidMessage,
    MessageTooLarge,
    UnknownTopic,
)
from django_skipqueue.outbox import Message, publish, publish_many
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from django_skipqueue.outbox.writing import partition_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_publish_writes_a_pending_row_with_a_stable_message_id():
    row = publish("orders", {"order_id": 7}, key="order-7", headers={"trace": "abc"})
    stored = OutboxMessage.objects.get(pk=row.pk)
    assert stored.status == MessageStatus.PENDING
    assert stored.payload == {"order_id": 7}
    assert stored.headers == {"trace": "abc"}
    assert len(stored.message_id) == 32 and stored.message_id == row.message_id
    assert stored.partition == partition_of("order-7", 16)
    assert stored.created_at is not None


def test_a_rolled_back_transaction_leaves_no_message():
    with pytest.raises(RuntimeError), transaction.atomic():
        publish("orders", {"order_id": 1}, key="order-1")
        raise RuntimeError("the business write failed")
    assert not OutboxMessage.objects.exists()


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"when": object()}, InvalidMessage),
        ({"amount": float("nan")}, InvalidMessage),
        ({1: "int key"}, InvalidMessage),
        ((1, 2), InvalidMessage),
        ({"blob": "x" * (256 * 1024)}, MessageTooLarge),
    ],
)
def test_payloads_that_json_cannot_carry_or_too_large_are_refused(payload, error):
    with pytest.raises(error):
        publish("orders", payload)
    assert not OutboxMessage.objects.exists()


def test_unknown_topics_bad_headers_and_keys_are_refused():
    with pytest.raises(UnknownTopic, match="SKIPQUEUE_OUTBOX_TOPICS"):
        publish("nowhere", {})
    with pytest.raises(InvalidMessage):
        publish("orders", {}, headers={"n": 1})  # type: ignore[dict-item]
    with pytest.raises(InvalidMessage):
        publish("orders", {}, key="k" * 256)
    with pytest.raises(InvalidMessage):
        publish("orders", {}, message_id="")
    assert not OutboxMessage.objects.exists()


def test_a_duplicate_message_id_raises_and_leaves_the_transaction_usable():
    publish("orders", {"n": 1}, message_id="order-placed-1")
    with transaction.atomic():
        publish("orders", {"n": 2}, message_id="order-placed-2")
        with pytest.raises(DuplicateMessage):
            publish("orders", {"n": 3}, message_id="order-placed-1")
        publish("orders", {"n": 4}, message_id="order-placed-4")
    ids = sorted(OutboxMessage.objects.values_list("message_id", flat=True))
    assert ids == ["order-placed-1", "order-placed-2", "order-placed-4"]


def test_publish_is_one_insert_and_takes_a_savepoint_only_on_postgresql():
    """MySQL/MariaDB and SQLite undo only the failed statement: the test above shows the
    transaction usable after a duplicate without the savepoint's two round trips."""
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        row = publish("orders", {"n": 1}, key="k")
    words = [query["sql"].split(None, 1)[0].upper() for query in queries.captured_queries]
    assert words.count("INSERT") == 1
    assert ("SAVEPOINT" in words) == (connection.vendor == "postgresql")
    stored = OutboxMessage.objects.get(message_id=row.message_id)
    if connection.features.can_return_rows_from_bulk_insert:
        assert (row.pk, row.created_at) == (stored.pk, stored.created_at)
    assert not row._state.adding


def test_publish_many_writes_all_or_none():
    rows = publish_many([Message("orders", {"n": n}, key="k") for n in range(3)])
    assert [r.payload["n"] for r in rows] == [0, 1, 2]
    assert len({r.partition for r in rows}) == 1
    with pytest.raises(UnknownTopic):
        publish_many([Message("orders", {"n": 9}), Message("nowhere", {})])
    with pytest.raises(DuplicateMessage):
        publish_many([Message("orders", {}, message_id="a"), Message("audit", {}, message_id="a")])
    assert OutboxMessage.objects.count() == 3


def test_messages_without_a_key_spread_over_partitions():
    publish_many([Message("audit", {"n": n}) for n in range(200)])
    assert OutboxMessage.objects.values("partition").distinct().count() > 8


@pytest.mark.mysql
def test_created_at_is_utc_whatever_the_session_time_zone():
    from django.db import connection

    from django_skipqueue.db.clock import read_db_now

    with connection.cursor() as cursor:
        cursor.execute("SET time_zone = '+05:00'")
    try:
        row = publish("orders", {"n": 1})
        created = OutboxMessage.objects.get(pk=row.pk).created_at
        assert abs((read_db_now("default") - created).total_seconds()) < 60
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET time_zone = '+00:00'")
