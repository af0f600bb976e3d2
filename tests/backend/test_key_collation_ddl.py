"""The key columns' DDL on both server families, MySQL included where no MySQL server runs.

The suite runs against MariaDB; MySQL's path differs in one name only, the collation. These
tests make the MariaDB connection answer as MySQL (``mysql_is_mariadb`` False) and generate
the migrations' SQL (``sqlmigrate``, nothing executed), then check the emitted DDL names
``utf8mb4_0900_bin``: the binary, NO PAD utf8mb4 collation that MySQL documents (release notes
of 8.0.17, where it was added, and worklog WL#13054 "Add utf8mb4 binary no-pad collation"),
unlike MySQL's ``utf8mb4_bin``, which is PAD SPACE. On MariaDB the same DDL is run for real by
the test database's migrations and checked in test_key_collation.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections

from django_skipqueue.db.keys import MARIADB_KEY_COLLATION, MYSQL_KEY_COLLATION, KeyField

pytestmark = [pytest.mark.mysql, pytest.mark.django_db]

#: The key columns each migration re-declares, by table.
MIGRATIONS = {
    ("django_skipqueue", "0010"): {
        "skipqueue_flow_key": ["key"],
        "skipqueue_job": ["flow_key", "idempotency_key", "active_key", "waiting_key"],
        "skipqueue_job_archive": ["idempotency_key"],
    },
    ("skipqueue_outbox", "0005"): {
        "skipqueue_outbox": ["key", "message_id"],
        "skipqueue_inbox": ["consumer", "message_id"],
    },
}


@pytest.fixture(params=[True, False], ids=["MariaDB", "MySQL"])
def mariadb(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The default connection, answering as MariaDB or as MySQL 8."""
    connection = connections["default"]
    was = connection.mysql_is_mariadb
    connection.mysql_is_mariadb = request.param
    yield request.param
    connection.mysql_is_mariadb = was


def sqlmigrate(app_label: str, name: str) -> str:
    out = StringIO()
    call_command("sqlmigrate", app_label, name, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("migration", list(MIGRATIONS), ids=lambda m: m[0])
def test_each_table_gets_one_alter_naming_the_servers_no_pad_collation(mariadb, migration):
    collation = MARIADB_KEY_COLLATION if mariadb else MYSQL_KEY_COLLATION
    other = MYSQL_KEY_COLLATION if mariadb else MARIADB_KEY_COLLATION
    sql = sqlmigrate(*migration)
    assert other not in sql
    for table, columns in MIGRATIONS[migration].items():
        (statement,) = re.findall(rf"^ALTER TABLE `{table}` .*;$", sql, re.MULTILINE)
        modified = re.findall(r"MODIFY `(\w+)` varchar\(\d+\) CHARACTER SET utf8mb4 "
                              rf"COLLATE `{collation}` ", statement)  # fmt: skip
        assert modified == columns


def test_generated_columns_keep_their_expression_and_get_the_collation(mariadb):
    sql = sqlmigrate("django_skipqueue", "0010")
    for column in ("active_key", "waiting_key"):
        clause = re.search(rf"MODIFY `{column}` (.*?) STORED", sql)
        assert clause is not None and "GENERATED ALWAYS AS (CASE WHEN" in clause.group(1)
    assert "THEN `idempotency_key` ELSE NULL END) STORED" in sql
    assert "CONCAT_WS('', 'b:', `flow_key`)" in sql


def test_a_new_table_declares_the_collation_too(mariadb):
    """A key column created from the model (a project's own table) gets the same comparison."""
    connection = connections["default"]
    params = KeyField(max_length=20).db_parameters(connection)
    assert params == {
        "type": "varchar(20) CHARACTER SET utf8mb4",
        "check": None,
        "collation": MARIADB_KEY_COLLATION if mariadb else MYSQL_KEY_COLLATION,
    }
