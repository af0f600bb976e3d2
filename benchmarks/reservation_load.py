"""One client of the reservations benchmark: reserve one unit of a hot item, then confirm it.

``python -m benchmarks.reservation_load DESIGN [--crash P]`` sets up, prints ``ready``, reads
``go START END`` (``time.time()`` values) on stdin, runs cycles from START to END and prints
the count of cycles done. Designs:

- ``pool``: django_skipqueue.reservations (one row per unit, SKIP LOCKED, ledger in the same
  transaction); a client restocks the pool when it finds it empty.
- ``pool_sql``: the same statements as ``pool``, written by hand (no ORM): the design's own
  cost, as the other scenarios' raw SQL reference.
- ``column``: one row per item, ``UPDATE ... SET available = available - 1 WHERE available >=
  1``, the hold row and the ledger row in the same transaction.
- ``redis``: the hold in Redis (DECR of the item's counter, a hold key with a TTL), the ledger
  row in the database: two systems, two writes, no common commit.

With ``--crash P`` a client dies (``os._exit``) with probability P between its hold and its
ledger write: inside the transaction for ``pool`` and ``column``, between Redis and the
database for ``redis``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import time

import django

ITEM, LOCATION, REFILL = 1, 1, 500


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("design", choices=sorted(DESIGNS))
    parser.add_argument("--crash", type=float, default=0.0)
    options = parser.parse_args()
    django.setup()
    cycle = DESIGNS[options.design](options.crash)
    print("ready", flush=True)
    _, start, end = sys.stdin.readline().split()
    time.sleep(max(0.0, float(start) - time.time()))
    done = 0
    while time.time() < float(end):
        cycle()
        done += 1
    print(done, flush=True)


def crash_point(probability: float) -> None:
    if probability and random.random() < probability:
        os._exit(9)


def pool(crash: float):
    from django.db import connection

    from django_skipqueue import reservations
    from django_skipqueue.exceptions import InsufficientStock, PoolFull
    from django_skipqueue.reservations import holds, transactions
    from django_skipqueue.reservations.inputs import pool_key

    def hold_or_die():
        def work():
            reservation = holds.hold("default", pool_key(ITEM, LOCATION), 1, "bench", 600, "")
            crash_point(crash)  # before the commit: the claim, the hold and the ledger go
            return reservation

        return transactions.in_pool_transaction(work)

    def cycle() -> None:
        try:
            reservation = hold_or_die()
        except InsufficientStock:
            with contextlib.suppress(PoolFull):
                reservations.restock(ITEM, LOCATION, REFILL)
            return
        reservations.confirm(reservation)

    connection.ensure_connection()
    return cycle


def pool_sql(crash: float):
    """The pool's statements written by hand: what the design costs without the ORM."""
    from django.db import connection

    claim = (
        "SELECT unit_seq FROM skipqueue_reservations_unit"
        " WHERE item_id = %s AND location_id = %s"
        " AND reserved_by IS NULL ORDER BY unit_seq LIMIT 1 FOR UPDATE SKIP LOCKED"
    )

    def transaction(cursor, work):
        cursor.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
        cursor.execute("START TRANSACTION")
        try:
            work()
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")

    def cycle() -> None:
        with connection.cursor() as cursor:
            state: dict[str, int] = {}

            def hold() -> None:
                cursor.execute(
                    "INSERT INTO skipqueue_reservations_reservation (item_id, location_id, holder,"
                    " reference, quantity, unit_seqs, state, created_at, expires_at) VALUES"
                    " (%s, %s, 'bench', '', 1, '[]', 'held', UTC_TIMESTAMP(6),"
                    " UTC_TIMESTAMP(6) + INTERVAL 10 MINUTE)",
                    [ITEM, LOCATION],
                )
                state["hold"] = cursor.lastrowid
                cursor.execute(claim, [ITEM, LOCATION])
                row = cursor.fetchone()
                if row is None:
                    raise LookupError
                state["seq"] = row[0]
                cursor.execute(
                    "UPDATE skipqueue_reservations_unit SET reserved_by = %s WHERE item_id = %s"
                    " AND location_id = %s AND unit_seq = %s",
                    [state["hold"], ITEM, LOCATION, row[0]],
                )
                cursor.execute(
                    "UPDATE skipqueue_reservations_reservation SET unit_seqs = %s WHERE id = %s",
                    [f"[{row[0]}]", state["hold"]],
                )
                crash_point(crash)
                _pool_ledger(cursor, -1, "hold", state["hold"])

            def confirm() -> None:
                cursor.execute(
                    "SELECT state FROM skipqueue_reservations_reservation"
                    " WHERE id = %s FOR UPDATE",
                    [state["hold"]],
                )
                cursor.execute(
                    "UPDATE skipqueue_reservations_reservation SET state = 'confirmed'"
                    " WHERE id = %s",
                    [state["hold"]],
                )
                cursor.execute(
                    "DELETE FROM skipqueue_reservations_unit"
                    " WHERE item_id = %s AND location_id = %s"
                    " AND unit_seq = %s AND reserved_by = %s",
                    [ITEM, LOCATION, state["seq"], state["hold"]],
                )
                _pool_ledger(cursor, 0, "sale", state["hold"])

            try:
                transaction(cursor, hold)
            except LookupError:
                from django_skipqueue import reservations
                from django_skipqueue.exceptions import PoolFull

                with contextlib.suppress(PoolFull):
                    reservations.restock(ITEM, LOCATION, REFILL)
                return
            transaction(cursor, confirm)

    return cycle


def _pool_ledger(cursor, delta: int, reason: str, hold: int) -> None:
    cursor.execute(
        "INSERT INTO skipqueue_reservations_ledgerentry (item_id, location_id, delta, reason,"
        " reference, reservation_id, created_at) VALUES (%s, %s, %s, %s, '', %s,"
        " UTC_TIMESTAMP(6))",
        [ITEM, LOCATION, delta, reason, hold],
    )


def column(crash: float):
    from django.db import connection, transaction

    def cycle() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE bench_stock SET available = available - 1 "
                "WHERE item = %s AND available >= 1",
                [ITEM],
            )
            if cursor.rowcount == 0:
                cursor.execute(
                    "UPDATE bench_stock SET available = available + %s WHERE item = %s",
                    [REFILL, ITEM],
                )
                _ledger(cursor, REFILL, "restock")
                return
            cursor.execute(
                "INSERT INTO bench_hold (item, state, expires_at) "
                "VALUES (%s, 'held', UTC_TIMESTAMP(6) + INTERVAL 10 MINUTE)",
                [ITEM],
            )
            hold = cursor.lastrowid
            crash_point(crash)
            _ledger(cursor, -1, "hold", hold)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE bench_hold SET state = 'confirmed' WHERE id = %s AND state = 'held'",
                [hold],
            )
            _ledger(cursor, 0, "sale", hold)

    return cycle


def redis_split(crash: float):
    import redis
    from django.db import connection

    client = redis.Redis()

    def cycle() -> None:
        left = client.decr(f"bench:stock:{ITEM}")
        if left < 0:
            client.incr(f"bench:stock:{ITEM}")
            client.incrby(f"bench:stock:{ITEM}", REFILL)
            with connection.cursor() as cursor:
                _ledger(cursor, REFILL, "restock")
            return
        hold = client.incr("bench:hold_id")
        client.set(f"bench:hold:{hold}", ITEM, ex=600)
        crash_point(crash)  # Redis says held; the ledger never hears of it
        with connection.cursor() as cursor:
            _ledger(cursor, -1, "hold", hold)
            _ledger(cursor, 0, "sale", hold)
        client.delete(f"bench:hold:{hold}")

    return cycle


def _ledger(cursor, delta: int, reason: str, hold: int | None = None) -> None:
    cursor.execute(
        "INSERT INTO bench_ledger (item, delta, reason, hold, created_at) "
        "VALUES (%s, %s, %s, %s, UTC_TIMESTAMP(6))",
        [ITEM, delta, reason, hold],
    )


DESIGNS = {"pool": pool, "pool_sql": pool_sql, "column": column, "redis": redis_split}

if __name__ == "__main__":
    main()
