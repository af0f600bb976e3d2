"""The relay's reads follow the outbox claim index and read only what they return."""

from __future__ import annotations

import pytest
from django.db import connection

from django_skipqueue.outbox import partitions
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from tests.db.test_claim_index import records_read_by

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

LIMIT = 100


def fill(count: int, *, status: str, partition: int | None = None, key: str = "k") -> None:
    rows = [
        OutboxMessage(
            status=status,
            partition=n % 16 if partition is None else partition,
            topic="orders",
            key=f"{key}{n % 50}",
            message_id=f"{status}-{key}-{partition}-{n}",
            payload={"n": n},
        )
        for n in range(count)
    ]
    OutboxMessage.objects.bulk_create(rows, batch_size=5000)


def explain(queryset) -> list[dict]:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE skipqueue_outbox")
        cursor.fetchall()


def test_the_partition_read_uses_the_claim_index_and_reads_only_its_batch():
    fill(2_000, status=MessageStatus.PENDING, partition=3)
    analyze()
    small = records_read_by(lambda: partitions.sendable("default", 3, LIMIT))

    fill(20_000, status=MessageStatus.DEAD)  # kept dead letters, every partition
    fill(10_000, status=MessageStatus.PENDING, key="other")  # other partitions' backlog
    fill(20, status=MessageStatus.RETRY, partition=4, key="held")
    analyze()

    pending = (
        OutboxMessage.objects.filter(status=MessageStatus.PENDING, partition=3)
        .exclude(key__in=["k1", "k2"])
        .order_by("id")[:LIMIT]
    )
    [plan] = explain(pending)
    assert plan["key"] == "skipqueue_outbox_claim", plan
    assert "filesort" not in (plan["Extra"] or ""), plan

    backlog = None

    def read() -> None:
        nonlocal backlog
        backlog = partitions.sendable("default", 3, LIMIT)

    big = records_read_by(read)
    assert backlog is not None and len(backlog.messages) == LIMIT
    assert small <= LIMIT + 10, small
    assert big <= LIMIT + 10, big


def test_finding_partitions_with_work_reads_one_entry_per_partition_not_the_backlog():
    partitions.ensure_partitions("default", 16)
    fill(15_000, status=MessageStatus.PENDING)
    fill(15_000, status=MessageStatus.DEAD)
    analyze()
    found: list[int] = []
    reads = records_read_by(lambda: found.extend(partitions.with_work("default")))
    assert found == list(range(16))
    assert reads <= 4 * 16 + 10, reads
