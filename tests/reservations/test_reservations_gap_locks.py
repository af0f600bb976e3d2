"""The gap-lock deadlock of an empty pool, reproduced on a private MariaDB server.

At REPEATABLE READ, a claim that finds no free unit locks the gap after the pool's last row (up
to the supremum when the pool is the table's last), and a refill's INSERT into that gap waits
for it; two transactions that each find the pool empty and refill it deadlock. At READ
COMMITTED, the level every reservation transaction sets, neither happens. The claim and the
schema are the app's own: the SQL Django generates for them.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import MySQLdb
import pytest
from django.core.management import call_command
from django.db import connection, transaction

from django_skipqueue.reservations.transactions import in_pool_transaction
from django_skipqueue.reservations.units import claim as claim_units
from django_skipqueue.reservations.units import pool_units
from tests.support.mariadb_server import PrivateMariaDB, available

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.skipif(not available(), reason="needs mariadbd and mariadb-install-db"),
]

UNIT = "skipqueue_reservations_unit"
LEVELS = ["REPEATABLE READ", "READ COMMITTED"]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, django_db_blocker
) -> Iterator[PrivateMariaDB]:
    """A private server with the app's tables, made from the app's migration."""
    server = PrivateMariaDB(tmp_path_factory.mktemp("gaplocks"), "--innodb-lock-wait-timeout=2")
    server.start()
    try:
        server.query("CREATE DATABASE pools")
        schema = io.StringIO()
        with django_db_blocker.unblock():
            call_command("sqlmigrate", "skipqueue_reservations", "0001", stdout=schema)
        lines = [line for line in schema.getvalue().splitlines() if not line.startswith("--")]
        for statement in "\n".join(lines).split(";\n"):
            if statement.strip():
                server.query(statement, database="pools")
        yield server
    finally:
        server.stop()


@pytest.fixture
def claim_sql(django_db_blocker) -> tuple[str, list]:
    """The API's claim of one unit of pool (2, 1), as Django writes it for MySQL."""
    with django_db_blocker.unblock(), transaction.atomic():
        free = pool_units("default", (2, 1)).filter(reserved_by__isnull=True).order_by("unit_seq")
        query = free.select_for_update(skip_locked=True).values_list("unit_seq")[:1].query
        sql, params = query.sql_with_params()
    assert "FOR UPDATE SKIP LOCKED" in sql
    return sql, list(params)


def session(server: PrivateMariaDB, level: str) -> MySQLdb.Connection:
    link = server.connect("pools")
    link.cursor().execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {level}")
    link.cursor().execute("START TRANSACTION")
    return link


def counters(server: PrivateMariaDB) -> dict[str, int]:
    rows = server.query("SHOW GLOBAL STATUS WHERE Variable_name IN "
                        "('Innodb_deadlocks', 'Innodb_row_lock_waits')")  # fmt: skip
    return {name: int(value) for name, value in rows}


POOL_ROW = (
    "INSERT IGNORE INTO skipqueue_reservations_pool (item_id, location_id, next_seq, created_at)"
    " VALUES (2, 1, 1, UTC_TIMESTAMP(6))"
)
LOCK_POOL = "SELECT id FROM skipqueue_reservations_pool WHERE item_id = 2 FOR UPDATE"
INSERT_UNIT = f"INSERT INTO {UNIT} (item_id, location_id, unit_seq) VALUES (2, 1, 1)"


def empty_pool_after(server: PrivateMariaDB) -> None:
    """Pool (1, 1) full of units, pool (2, 1) empty and last in the table."""
    server.query(f"DELETE FROM {UNIT}", database="pools")
    values = ", ".join(f"(1, 1, {seq})" for seq in range(1, 11))
    sql = f"INSERT INTO {UNIT} (item_id, location_id, unit_seq) VALUES {values}"
    server.query(sql, database="pools")


def insert_unit(link: MySQLdb.Connection, seq: int) -> None:
    link.cursor().execute(INSERT_UNIT.replace("1)", f"{seq})"))


def claim(link: MySQLdb.Connection, claim_sql: tuple[str, list]) -> list:
    cursor = link.cursor()
    cursor.execute(*claim_sql)
    return list(cursor.fetchall())


@pytest.mark.parametrize("level", LEVELS)
def test_an_empty_pool_claim_blocks_a_restock_only_at_repeatable_read(server, claim_sql, level):
    empty_pool_after(server)
    before = counters(server)
    claimer, restocker = session(server, level), session(server, level)
    try:
        assert claim(claimer, claim_sql) == []
        if level == "REPEATABLE READ":
            with pytest.raises(MySQLdb.OperationalError) as waited:
                insert_unit(restocker, 1)
            assert waited.value.args[0] == 1205, "the restock waited out its lock wait timeout"
        else:
            insert_unit(restocker, 1)
            restocker.commit()
    finally:
        claimer.close()
        restocker.close()
    waits = counters(server)["Innodb_row_lock_waits"] - before["Innodb_row_lock_waits"]
    assert waits == (1 if level == "REPEATABLE READ" else 0)


@pytest.mark.parametrize("level", LEVELS)
def test_a_claim_that_refills_an_empty_pool_deadlocks_a_restock_only_at_repeatable_read(
    server, claim_sql, level
):
    """A reserve that refills on demand (claim, then lock the pool row to restock) against a
    restock (pool row, then its inserts): the lock order is the same, the gap lock is not."""
    empty_pool_after(server)
    server.query(POOL_ROW, database="pools")
    before = counters(server)
    claimer, restocker = session(server, level), session(server, level)
    errors: list[int] = []

    def run(link: MySQLdb.Connection, *statements: str) -> None:
        try:
            for statement in statements:
                link.cursor().execute(statement)
            link.commit()
        except MySQLdb.OperationalError as error:
            errors.append(error.args[0])
            link.rollback()

    try:
        assert claim(claimer, claim_sql) == []
        restocker.cursor().execute(LOCK_POOL)
        restock = threading.Thread(target=run, args=(restocker, INSERT_UNIT))
        restock.start()
        restock.join(0.5)  # at REPEATABLE READ its insert waits for the claim's gap lock
        run(claimer, LOCK_POOL, INSERT_UNIT.replace("1)", "2)"))
        restock.join(10)
    finally:
        claimer.close()
        restocker.close()
    deadlocks = counters(server)["Innodb_deadlocks"] - before["Innodb_deadlocks"]
    units = server.query(f"SELECT COUNT(*) FROM {UNIT} WHERE item_id = 2", database="pools")
    if level == "REPEATABLE READ":
        assert (deadlocks, errors) == (1, [1213])
        assert units == [(1,)], "one of the two was rolled back"
    else:
        assert (deadlocks, errors) == (0, [])
        assert units == [(2,)]


def insert_elsewhere(item: int, seq: int) -> int | None:
    """Insert a unit of ``item`` from another connection; return the error code, if any."""
    settings = connection.settings_dict
    link = MySQLdb.connect(
        host=settings["HOST"] or "127.0.0.1", port=int(settings["PORT"] or 3306),
        user=settings["USER"] or "root", password=settings["PASSWORD"], database=settings["NAME"],
    )  # fmt: skip
    try:
        link.cursor().execute("SET SESSION innodb_lock_wait_timeout = 1")
        link.cursor().execute(
            f"INSERT INTO {UNIT} (item_id, location_id, unit_seq) VALUES (%s, 1, %s)", [item, seq]
        )
        link.commit()
        return None
    except MySQLdb.OperationalError as error:
        return error.args[0]
    finally:
        link.close()


@pytest.mark.django_db(transaction=True)
def test_pool_transactions_take_no_gap_lock_whatever_the_session_default():
    """With the session at REPEATABLE READ, the API's own claim on an empty pool (the table's
    last) lets a restock insert; the same claim in a transaction at the session's level does
    not. (information_schema.innodb_trx may show a reused transaction's former level.)"""
    last = 2**62
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")

    def claim_then_restock(item: int) -> int | None:
        """Claim from an empty pool, the table's last, then restock it from elsewhere."""
        assert claim_units("default", (item, 1), 1) == []
        return insert_elsewhere(item, 1)

    try:
        assert in_pool_transaction(lambda: claim_then_restock(last)) is None
        with transaction.atomic():
            assert claim_then_restock(last + 1) == 1205, "at the session's level it waits"
        assert in_pool_transaction(lambda: claim_then_restock(last + 2)) is None
    finally:
        connection.close()
