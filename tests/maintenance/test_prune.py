"""Bookkeeping tables are pruned: old counters and long-gone workers go, recent ones stay."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.maintenance import prune
from django_skipqueue.maintenance.loop import Maintenance
from django_skipqueue.models import QueueMinute, WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)


def add_minutes(count: int, age: timedelta, owner: str) -> None:
    now = read_db_now("default").replace(second=0, microsecond=0)
    QueueMinute.objects.bulk_create(
        QueueMinute(minute=now - age - timedelta(minutes=i), queue_name="default", owner=owner)
        for i in range(count)
    )


def add_worker(owner: str, beat_age: timedelta) -> None:
    beat = read_db_now("default") - beat_age
    WorkerProcess.objects.create(
        owner=owner, role="worker", hostname="h", pid=1, started_at=beat, last_heartbeat_at=beat
    )


def test_old_counters_and_gone_workers_are_pruned_in_batches(monkeypatch):
    monkeypatch.setattr(prune, "PRUNE_BATCH", 100)
    add_minutes(250, timedelta(days=2), "old")
    add_minutes(30, timedelta(minutes=1), "recent")
    add_worker("gone", timedelta(days=3))
    add_worker("alive", timedelta(seconds=2))

    assert prune.prune_metrics("default") == 251
    assert set(QueueMinute.objects.values_list("owner", flat=True)) == {"recent"}
    assert QueueMinute.objects.count() == 30
    assert list(WorkerProcess.objects.values_list("owner", flat=True)) == ["alive"]


def test_retention_is_a_setting(settings):
    settings.SKIPQUEUE_METRICS_RETENTION_SECONDS = 60
    add_minutes(5, timedelta(minutes=10), "older-than-a-minute")
    add_worker("stopped-beating", timedelta(minutes=5))
    assert prune.prune_metrics("default") == 6


def test_the_maintenance_loop_prunes_on_its_timer():
    add_minutes(3, timedelta(days=2), "old")
    Maintenance("default").run_due()
    assert QueueMinute.objects.count() == 0
