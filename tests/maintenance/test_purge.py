"""Chunked purge: what it deletes, chunk bounds, archive, dry run, interrupts, the command."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connections, transaction
from django.test import override_settings
from django.utils import timezone

from django_skipqueue.maintenance.purge import Purge, PurgeOptions, purge
from django_skipqueue.maintenance.purge_report import LogReporter
from django_skipqueue.models import Job, JobArchive
from tests.support.bulkfill import insert_jobs

pytestmark = pytest.mark.django_db(transaction=True)
DAY = 86_400
WEEK = timedelta(days=7)


class Recorder(LogReporter):
    """Keep every chunk report."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list = []

    def chunk(self, purge, report) -> None:
        self.chunks.append(report)


def fill_history() -> dict[str, set[int]]:
    """Old and recent finished jobs, and active ones interleaved between them."""
    insert_jobs(150, status="succeeded", finished_seconds_ago=8 * DAY)
    insert_jobs(30, status="ready")
    insert_jobs(150, status="succeeded", finished_seconds_ago=9 * DAY)
    insert_jobs(50, status="failed", finished_seconds_ago=40 * DAY)
    insert_jobs(10, status="claimed")
    insert_jobs(20, status="succeeded", finished_seconds_ago=3600)
    insert_jobs(10, status="scheduled", run_after_seconds=600)
    insert_jobs(25, status="cancelled", finished_seconds_ago=2 * DAY)
    old = set(
        Job.objects.finished()
        .filter(finished_at__lt=timezone.now() - WEEK)
        .values_list("pk", flat=True)
    )
    kept = set(Job.objects.exclude(pk__in=old).values_list("pk", flat=True))
    return {"old": old, "kept": kept}


def test_purge_deletes_old_finished_jobs_only_in_bounded_chunks():
    rows = fill_history()
    recorder = Recorder()

    summary = purge(older_than=WEEK, chunk=40, sleep=0, reporter=recorder)

    assert summary.deleted == len(rows["old"]) == 350
    assert set(Job.objects.values_list("pk", flat=True)) == rows["kept"]
    assert max(r.deleted for r in recorder.chunks) <= 40
    assert sum(r.deleted for r in recorder.chunks) == 350
    assert summary.largest_chunk <= 40 and summary.chunks == len(recorder.chunks)


def test_retention_per_status_comes_from_the_settings():
    fill_history()
    retention = {"succeeded": "1d", "failed": None, "cancelled": "1d"}
    with override_settings(SKIPQUEUE_PURGE_RETENTION=retention):
        summary = purge(chunk=1000, sleep=0)
    left = Counter(Job.objects.values_list("status", flat=True))
    assert summary.deleted == 300 + 25
    assert left == {"ready": 30, "failed": 50, "claimed": 10, "succeeded": 20, "scheduled": 10}


def test_only_the_statuses_asked_for_are_purged():
    fill_history()
    summary = purge(older_than=WEEK, statuses=["failed"], sleep=0)
    assert summary.deleted == 50
    assert not Job.objects.filter(status="failed").exists()
    with pytest.raises(ValueError, match="Only finished jobs are purged"):
        purge(older_than=WEEK, statuses=["ready"])


def test_archive_keeps_every_purged_row_once():
    rows = fill_history()
    before = {
        job["id"]: job
        for job in Job.objects.filter(pk__in=rows["old"]).values(
            "id", "status", "task_path", "errors", "worker_ids", "finished_at", "owner"
        )
    }

    summary = purge(older_than=WEEK, chunk=64, sleep=0, archive=True)

    assert summary.deleted == summary.archived == len(rows["old"])
    archived = list(
        JobArchive.objects.values(
            "id", "status", "task_path", "errors", "worker_ids", "finished_at", "owner"
        )
    )
    assert len(archived) == len({a["id"] for a in archived}) == len(before)
    assert {a["id"]: a for a in archived} == before
    assert not Job.objects.filter(pk__in=rows["old"]).exists()
    assert JobArchive.objects.filter(archived_at__isnull=True).count() == 0


def test_a_chunk_that_cannot_archive_rolls_back_whole():
    rows = fill_history()
    first = min(rows["old"])
    JobArchive.objects.create(
        id=first, queue_name="default", priority=0, status="succeeded", task_path="x",
        attempts=1, max_attempts=1, enqueued_at=timezone.now(), archived_at=timezone.now(),
    )  # fmt: skip
    with pytest.raises(IntegrityError):
        purge(older_than=WEEK, chunk=50, sleep=0, archive=True)
    assert Job.objects.filter(pk__in=rows["old"]).count() == len(rows["old"])
    assert JobArchive.objects.count() == 1


def test_dry_run_counts_and_changes_nothing():
    rows = fill_history()
    summary = purge(older_than=WEEK, chunk=30, dry_run=True)
    assert summary.deleted == len(rows["old"]) and summary.dry_run
    assert Job.objects.count() == len(rows["old"]) + len(rows["kept"])


def test_the_chunk_adapts_to_the_target_duration_and_never_exceeds_the_maximum():
    insert_jobs(3000, status="succeeded", finished_seconds_ago=8 * DAY)
    recorder = Recorder()
    runner = Purge(
        PurgeOptions.from_settings(older_than=WEEK, chunk=500, sleep=0, chunk_seconds=1e-6),
        reporter=recorder,
    )
    assert runner.run()
    sizes = [r.selected for r in recorder.chunks]
    assert sizes[0] == 500 and max(sizes) == 500
    assert runner.chunk == 50, "shrunk to the floor for an impossible target"
    grow = Purge(PurgeOptions.from_settings(older_than=WEEK, chunk=500, chunk_seconds=60))
    grow.chunk = 50
    grow._adapt(0.001)
    assert grow.chunk == 76
    grow.chunk = 450
    grow._adapt(0.001)
    assert grow.chunk == 500


def test_a_stop_request_ends_after_a_complete_chunk_and_a_new_run_goes_on():
    insert_jobs(500, status="succeeded", finished_seconds_ago=8 * DAY)
    recorder = Recorder()
    runner = Purge(
        PurgeOptions.from_settings(older_than=WEEK, chunk=100, sleep=0),
        reporter=recorder,
        should_stop=lambda: len(recorder.chunks) >= 2,
    )
    assert runner.run() is False
    assert runner.summary.interrupted and runner.summary.deleted == 200
    assert Job.objects.count() == 300
    assert purge(older_than=WEEK, sleep=0).deleted == 300


def test_a_time_budget_pauses_the_purge_and_run_goes_on_from_its_place():
    insert_jobs(400, status="succeeded", finished_seconds_ago=8 * DAY)
    runner = Purge(PurgeOptions.from_settings(older_than=WEEK, chunk=100, sleep=0.2))
    assert runner.run(max_seconds=0.1) is False
    assert 0 < runner.summary.deleted < 400
    while not runner.run(max_seconds=0.1):
        pass
    assert runner.summary.deleted == 400 and Job.objects.count() == 0


@pytest.mark.skip_locked
def test_rows_someone_holds_are_skipped_not_waited_for(close_thread_connections):
    insert_jobs(100, status="failed", finished_seconds_ago=8 * DAY)
    held = Job.objects.order_by("pk").values_list("pk", flat=True)[10]
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(Job.objects.select_for_update().filter(pk=held))
                locked.set()
                release.wait(120)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(60)
        started = time.monotonic()
        summary = purge(older_than=WEEK, chunk=30, sleep=0)
        took = time.monotonic() - started
    finally:
        release.set()
        holder.join()
    # Had it waited for the lock, it would have deleted the held row once released.
    assert (summary.deleted, summary.skipped) == (99, 1)
    assert took < 15, f"the purge waited {took:.1f}s on a row it does not delete"
    assert list(Job.objects.values_list("pk", flat=True)) == [held]


def test_purge_command_prints_a_summary(capsys):
    fill_history()
    call_command("skipqueue_purge", "--older-than", "7d", "--chunk", "100", "--sleep", "0")
    out = capsys.readouterr().out
    assert "deleted 350 rows in 4 chunks" in out
    assert Job.objects.finished().filter(finished_at__lt=timezone.now() - WEEK).count() == 0


def test_purge_command_refuses_bad_arguments():
    with pytest.raises(CommandError, match="not a duration"):
        call_command("skipqueue_purge", "--older-than", "seven days")
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("skipqueue_purge", "--status", "ready")
    with pytest.raises(CommandError, match="not in DATABASES"):
        call_command("skipqueue_purge", "--older-than", "7d", "--replica", "nowhere")
