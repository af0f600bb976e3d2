"""The key migrations on tables that hold rows: rows kept, folding gone, and back again.

Runs the real migrations (django_skipqueue 0010, skipqueue_outbox 0005) backwards and forwards
on the test database of MariaDB, with rows written between the two, as an upgrade does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = [pytest.mark.mysql, pytest.mark.django_db(transaction=True)]

BEFORE = [
    ("django_skipqueue", "0009_flow_blocked_holders"),
    ("skipqueue_outbox", "0004_compact_payload"),
]
AFTER = [("django_skipqueue", "0010_keys_as_bytes"), ("skipqueue_outbox", "0005_keys_as_bytes")]


@pytest.fixture
def before_keys() -> Iterator[Any]:
    """Migrate back to before the key migrations; return its apps; migrate forward at the end."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        yield executor.loader.project_state(BEFORE).apps
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


def migrate_forward() -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    return executor.loader.project_state(AFTER).apps


def create_job(apps: Any, key: str) -> Any:
    now = timezone.now()
    job = apps.get_model("django_skipqueue", "Job")
    return job.objects.create(task_path="x.y", enqueued_at=now, idempotency_key=key, flow_key=key)


def test_the_migrations_keep_rows_and_stop_the_folding(before_keys):
    first = create_job(before_keys, "Order-A")
    inbox = before_keys.get_model("skipqueue_outbox", "InboxMessage")
    inbox.objects.create(message_id="M-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        create_job(before_keys, "order-a")  # one key under utf8mb4_general_ci

    after = migrate_forward()
    job = after.get_model("django_skipqueue", "Job")
    kept = job.objects.get(pk=first.pk)
    assert (kept.idempotency_key, kept.active_key, kept.waiting_key) == (
        "Order-A",
        "Order-A",
        "r:Order-A",
    )
    second = create_job(after, "order-a")
    assert job.objects.get(active_key="order-a").pk == second.pk != first.pk
    inbox = after.get_model("skipqueue_outbox", "InboxMessage")
    inbox.objects.create(message_id="m-1")
    assert sorted(inbox.objects.values_list("message_id", flat=True)) == ["M-1", "m-1"]
