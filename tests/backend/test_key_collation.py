"""Keys are bytes: keys differing only in case, accents or trailing spaces are distinct.

On MySQL and MariaDB the key columns used to take the table's collation (utf8mb4_general_ci),
which folds ``Order-A`` into ``order-a``, ``café`` into ``cafe`` and pads ``k `` to ``k``: a
distinct job was silently never inserted, a keyed bulk raised IntegrityError, and distinct flow
keys shared one slot. PostgreSQL and SQLite already compare text byte for byte; the same tests
run there to keep it so.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.db import connection
from django.utils import timezone

from django_skipqueue.models import FlowKey, Job, JobArchive, JobStatus
from tests.support.admin import changelist_url, make_job
from tests.support.tasks import export_for, sync_account

pytestmark = pytest.mark.django_db

#: Pairs of distinct keys that a case-, accent- or pad-insensitive comparison takes as one.
PAIRS = [("Order-A", "order-a"), ("k", "k "), ("café", "cafe")]
PAIR_IDS = ["case", "trailing-space", "accent"]
FLOW_PREFIX = "tests.support.tasks.export_for:customer:"


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_distinct_idempotency_keys_give_distinct_jobs(pair):
    first, second = (sync_account.using(idempotency_key=key).enqueue(1) for key in pair)
    assert first.id != second.id
    stored = dict(Job.objects.values_list("idempotency_key", "active_key"))
    assert stored == {key: key for key in pair}
    # The same key again is still one job, found through the unique active key.
    assert sync_account.using(idempotency_key=pair[1]).enqueue(1).id == second.id


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_a_keyed_bulk_inserts_jobs_of_distinct_keys(backend, pair):
    calls = [(sync_account.using(idempotency_key=key), [1], {}) for key in (*pair, pair[0])]
    results = backend.enqueue_many(calls)
    assert sorted(results.duplicates) == [2]
    assert results[0].id != results[1].id and results[2].id == results[0].id
    assert sorted(Job.objects.values_list("idempotency_key", flat=True)) == sorted(pair)


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_distinct_flow_keys_are_distinct_slots(pair):
    # concurrency_limit=1: a second job of the same key would wait BLOCKED for the slot.
    jobs = [Job.objects.get(pk=export_for.enqueue(customer).id) for customer in pair]
    assert [job.status for job in jobs] == [JobStatus.READY, JobStatus.READY]
    keys = [f"{FLOW_PREFIX}{customer}" for customer in pair]
    assert [job.flow_key for job in jobs] == keys
    assert sorted(FlowKey.objects.values_list("key", "running")) == sorted((k, 1) for k in keys)
    again = Job.objects.get(pk=export_for.enqueue(pair[1]).id)
    assert again.status == JobStatus.BLOCKED
    assert again.waiting_key == f"b:{keys[1]}"


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_every_key_column_stores_and_finds_distinct_keys(pair):
    """Row by row through the ORM: a primary key, a generated key and a plain key column."""
    now = timezone.now()
    for key in pair:
        FlowKey.objects.create(key=key)
        JobArchive.objects.create(
            id=len(key) * 10 + ord(key[-1]), queue_name="default", priority=0, status="failed",
            task_path="x.y", attempts=1, max_attempts=1, enqueued_at=now, archived_at=now,
            idempotency_key=key,
        )  # fmt: skip
    for key in pair:
        assert FlowKey.objects.get(key=key).key == key
        assert JobArchive.objects.get(idempotency_key=key).idempotency_key == key


@pytest.mark.parametrize(
    "pair", [("Order-A", "order-a"), ("café", "cafe")], ids=["case", "accent"]
)
def test_the_admin_search_finds_a_key_as_typed_and_no_other(admin_client, pair):
    """Exact, as the key is in the code: a search for one key lists its jobs only."""
    jobs = {key: make_job(JobStatus.READY, idempotency_key=key) for key in pair}
    for key in pair:
        response = admin_client.get(changelist_url(f"q=key:{quote(key)}"))
        assert [job.pk for job in response.context["cl"].result_list] == [jobs[key].pk]


KEY_COLUMNS = {
    ("skipqueue_job", "idempotency_key"), ("skipqueue_job", "active_key"),
    ("skipqueue_job", "flow_key"), ("skipqueue_job", "waiting_key"),
    ("skipqueue_flow_key", "key"), ("skipqueue_job_archive", "idempotency_key"),
    ("skipqueue_outbox", "message_id"), ("skipqueue_outbox", "key"),
    ("skipqueue_inbox", "message_id"), ("skipqueue_inbox", "consumer"),
}  # fmt: skip


@pytest.mark.mysql
def test_every_key_column_has_a_binary_no_pad_collation():
    """The catalogue, not only the behaviour: each key column (generated ones too) has the
    server's key collation, and the server compares with it bytewise and without padding."""
    expected = "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, collation_name FROM information_schema.columns"
            " WHERE table_schema = DATABASE() AND table_name LIKE %s",
            ["skipqueue%"],
        )
        collations = {(table, column): name for table, column, name in cursor.fetchall()}
        cursor.execute(
            f"SELECT _utf8mb4'k' COLLATE {expected} = _utf8mb4'k ',"
            f" _utf8mb4'A' COLLATE {expected} = _utf8mb4'a',"
            f" _utf8mb4'café' COLLATE {expected} = _utf8mb4'cafe'"
        )
        assert cursor.fetchone() == (0, 0, 0)
    assert {collations[column] for column in KEY_COLUMNS} == {expected}


def test_postgresql_key_columns_compare_with_a_deterministic_collation():
    """PostgreSQL's equality is bytewise under a deterministic collation, whatever its order
    (en_US.UTF-8 sorts ``a`` before ``B`` yet never takes them as equal); a nondeterministic
    ICU collation on a key column would fold keys as MySQL's ``_ci`` collations do."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attrelid::regclass::text, a.attname, c.collisdeterministic"
            " FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation"
            " WHERE a.attrelid::regclass::text || '.' || a.attname = ANY(%s)",
            [[f"{table}.{column}" for table, column in KEY_COLUMNS]],
        )
        rows = cursor.fetchall()
    assert len(rows) == len(KEY_COLUMNS)
    assert all(deterministic for _, _, deterministic in rows)
