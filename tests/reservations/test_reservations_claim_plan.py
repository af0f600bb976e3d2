"""One lock per claimed unit: the claim walks its pool's primary-key range and nothing else.

With full pools on either side, a large ledger and a long reservation history, the claim's plan
uses the primary key with no sort, and the records one reservation reads stay within its pool
(the cap bounds them), whatever the size of the other tables.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from django_skipqueue import reservations
from django_skipqueue.reservations.units import claim, pool_units
from tests.db.test_claim_index import records_read_by

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

CAP = 1000
DIGITS = "(SELECT 0 d UNION ALL " + " UNION ALL ".join(f"SELECT {n}" for n in range(1, 10)) + ")"
NUMBERS = (
    f"SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * g.d AS n "
    f"FROM {DIGITS} a, {DIGITS} b, {DIGITS} c, {DIGITS} e, {DIGITS} f, {DIGITS} g"
)


def execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def fill_pool(item: int, location: int = 1) -> None:
    reservations.restock(item, location, CAP)


def fill_history(rows: int) -> None:
    """A large ledger and reservation history on other pools, written in bulk."""
    execute(
        "INSERT INTO skipqueue_reservations_ledgerentry "
        "(item_id, location_id, delta, reason, reference, created_at) "
        f"SELECT n %% 500, 1, -1, 'hold', '', UTC_TIMESTAMP(6) FROM ({NUMBERS}) s WHERE n < %s",
        [rows],
    )
    execute(
        "INSERT INTO skipqueue_reservations_reservation (item_id, location_id, holder, "
        "reference, quantity, unit_seqs, state, created_at, expires_at) "
        "SELECT n %% 500, 1, 'old', '', 1, '[]', 'expired', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) "
        f"FROM ({NUMBERS}) s WHERE n < %s",
        [rows // 2],
    )
    for table in ("unit", "ledgerentry", "reservation"):
        execute(f"ANALYZE TABLE skipqueue_reservations_{table}")


def explain_claim() -> dict:
    with transaction.atomic():
        free = pool_units("default", (2, 1)).filter(reserved_by__isnull=True).order_by("unit_seq")
        query = free.select_for_update(skip_locked=True).values_list("unit_seq")[:3].query
        sql, params = query.sql_with_params()
        assert "FOR UPDATE SKIP LOCKED" in sql
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, params)
            names = [column[0] for column in cursor.description]
            [row] = cursor.fetchall()
    return dict(zip(names, row, strict=True))


def test_the_claim_reads_its_pool_by_primary_key_without_a_sort():
    for item in (1, 2, 3):  # full pools around the one claimed from
        fill_pool(item)
    fill_history(200_000)
    plan = explain_claim()
    assert plan["key"] == "PRIMARY", plan
    assert plan["type"] in ("ref", "range"), plan  # the pool's prefix of the key
    assert "filesort" not in (plan["Extra"] or ""), plan
    assert int(plan["rows"]) <= CAP, plan


def test_records_read_per_reservation_stay_within_the_pool():
    for item in (1, 2, 3):
        fill_pool(item)
    small = records_read_by(lambda: reservations.reserve(2, 1, 3, holder="a", ttl=60))
    fill_history(200_000)
    large = records_read_by(lambda: reservations.reserve(2, 1, 3, holder="b", ttl=60))
    # Free units at the front of the pool: a handful of records, ledger size or not.
    assert small < 40, small
    assert large < 40, large
    # Hold most of the pool: the claim now walks past the held units, and no further.
    for _ in range(9):
        reservations.reserve(2, 1, 110, holder="bulk", ttl=60)
    behind = records_read_by(lambda: reservations.reserve(2, 1, 3, holder="c", ttl=60))
    assert CAP * 0.99 < behind < CAP + 40, behind
    # A claim on its own reads what it locks: the pool's first free unit and its neighbours.
    with transaction.atomic():
        seqs = []
        reads = records_read_by(lambda: seqs.extend(claim("default", (3, 1), 5)))
    assert seqs == [1, 2, 3, 4, 5]
    assert reads <= 7, reads
