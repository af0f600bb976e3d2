"""skipqueue_status matches the table; skipqueue_health fails, with its reason, in each case."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from django_skipqueue import queues
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import Job, MaintenanceRun, QueueMinute, WorkerProcess
from django_skipqueue.monitoring.metrics import CLAIM_LATENCY_BUCKETS_MS, empty_histogram
from django_skipqueue.monitoring.stats import DEPTH_STATUSES, queue_status
from tests.support.bulkfill import insert_jobs
from tests.support.handler_reads import handler_reads
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)
QUEUES = ["default", "high", "emails", "reports"]


def fill_queues() -> None:
    insert_jobs(37, status="ready")
    insert_jobs(5, status="scheduled", run_after_seconds=600)
    insert_jobs(4, status="claimed")
    insert_jobs(3, status="failed", finished_seconds_ago=60)
    insert_jobs(10, status="succeeded", finished_seconds_ago=60)
    insert_jobs(2, status="ready", queue_name="emails")
    insert_jobs(6, status="failed", queue_name="emails", finished_seconds_ago=60)
    noop.using(queue_name="reports").enqueue()
    queues.pause("reports")


def add_worker(owner: str, queues: list[str], seconds_ago: float = 0, **extra) -> None:
    now = read_db_now("default")
    WorkerProcess.objects.create(
        owner=owner, role="worker", hostname="h", pid=1, queues=queues, **extra,
        started_at=now - timedelta(hours=1),
        last_heartbeat_at=now - timedelta(seconds=seconds_ago),
    )  # fmt: skip


def record_reaper(seconds_ago: float = 0) -> None:
    now = read_db_now("default")
    MaintenanceRun.objects.create(
        task="reap", runner="r", last_started_at=now, runs=1,
        last_finished_at=now - timedelta(seconds=seconds_ago),
    )  # fmt: skip


def test_depth_matches_the_table_for_every_queue_and_status():
    fill_queues()
    report = queue_status("default", QUEUES)
    for queue in QUEUES:
        for status in DEPTH_STATUSES:
            real = Job.objects.filter(queue_name=queue, status=status).count()
            shown = report.queue(queue).counts[status]
            assert (shown.value, shown.approximate) == (real, False), (queue, status)
    assert report.queue("default").counts["ready"].value == 37
    assert report.queue("reports").paused and not report.queue("default").paused


def test_counts_past_the_cap_are_estimates_and_say_so():
    insert_jobs(500, status="ready")
    report = queue_status("default", ["default"], cap=100)
    ready = report.queue("default").counts["ready"]
    assert ready.approximate and ready.value > 100
    assert str(ready).startswith("~")
    assert report.queue("default").counts["claimed"].approximate is False


def test_oldest_ready_age_finds_a_starving_low_priority_job():
    for _ in range(3):
        noop.using(priority=50).enqueue()
    starving = noop.using(priority=-50).enqueue()
    Job.objects.filter(pk=starving.id).update(enqueued_at=timezone.now() - timedelta(minutes=7))
    deferred = noop.enqueue()
    Job.objects.filter(pk=deferred.id).update(
        enqueued_at=timezone.now() - timedelta(hours=2), run_after=timezone.now()
    )
    age = queue_status("default", ["default"]).queue("default").oldest_ready_age
    assert 7 * 60 - 5 < age < 7 * 60 + 30
    assert queue_status("default", ["emails"]).queue("emails").oldest_ready_age is None


def test_throughput_latency_and_reclaims_come_from_the_minute_rows():
    now = read_db_now("default").replace(second=0, microsecond=0)
    fast, slow = empty_histogram(), empty_histogram()
    fast[CLAIM_LATENCY_BUCKETS_MS.index(2)] = 90  # 90 claims of 1-2 ms
    slow[CLAIM_LATENCY_BUCKETS_MS.index(50)] = 10  # 10 claims of 20-50 ms
    rows = [
        (now, "w1", 30, 2, 40, 0, fast),
        (now - timedelta(minutes=2), "w2", 18, 0, 20, 0, slow),
        (now - timedelta(minutes=30), "reaper:x", 0, 0, 0, 3, []),
        (now - timedelta(minutes=90), "reaper:x", 500, 0, 0, 100, []),  # out of both windows
    ]
    for minute, owner, succeeded, failed, claimed, reclaimed, histogram in rows:
        QueueMinute.objects.create(
            minute=minute, queue_name="default", owner=owner, succeeded=succeeded,
            failed=failed, claimed=claimed, reclaimed=reclaimed,
            claim_latency_histogram=histogram,
        )  # fmt: skip
    queue = queue_status("default", ["default"], window_minutes=5).queue("default")
    assert queue.reclaimed_last_hour == 3
    assert (queue.claim_p50_ms, queue.claim_p95_ms) == (2, 50)
    # 50 jobs finished within a window of 4 whole minutes plus the current partial one.
    assert 50 / 5 <= queue.finished_per_minute <= 50 / 4


def test_workers_are_live_or_stale_by_their_heartbeat():
    add_worker("a", ["default", "emails"])
    add_worker("b", ["default"], seconds_ago=5)
    add_worker("c", ["default"], seconds_ago=600)
    add_worker("d", ["default"], seconds_ago=900, stopped_at=timezone.now())
    report = queue_status("default", QUEUES)
    assert (report.workers.live, report.workers.stale) == (2, 1)
    assert (report.queue("default").live_workers, report.queue("default").stale_workers) == (2, 1)
    assert (report.queue("emails").live_workers, report.queue("high").live_workers) == (1, 0)


def test_status_command_text_and_json(capsys):
    fill_queues()
    add_worker("a", ["default"])
    record_reaper()
    call_command("skipqueue_status", "--json")
    data = json.loads(capsys.readouterr().out)
    default = next(q for q in data["queues"] if q["name"] == "default")
    assert default["counts"] == {"ready": 37, "scheduled": 5, "claimed": 4, "failed": 3}
    assert data["workers"] == {"live": 1, "stale": 0} and data["reaper_age"] < 5
    call_command("skipqueue_status")
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:6] == ["queue", "paused", *DEPTH_STATUSES]
    assert "reports" in text and "yes" in text and "1 live" in text


def health(*args: str) -> tuple[int, str]:
    try:
        call_command("skipqueue_health", *args)
    except SystemExit as exit:
        return int(exit.code), ""
    return 0, ""


def test_health_is_ok_with_a_live_worker_a_recent_reaper_and_young_jobs(capsys):
    fill_queues()
    add_worker("a", ["default", "emails"])
    record_reaper(seconds_ago=3)
    assert health() == (0, "")
    assert capsys.readouterr().out.startswith("OK: 1 live worker")


@pytest.mark.parametrize(
    ("case", "code", "reason"),
    [
        ("no worker", 3, "no live worker process"),
        ("stale worker", 3, "no live worker process (1 stale)"),
        ("old ready job", 4, "queue default: oldest ready job has waited"),
        ("reaper never ran", 5, "the reaper has never run"),
        ("reaper stopped", 5, "the reaper last ran 10m00s ago"),
    ],
)
def test_health_fails_with_its_own_status_and_reason(case, code, reason, capsys):
    noop.enqueue()
    worker_age = {"no worker": None, "stale worker": 600}.get(case, 0)
    if worker_age is not None:
        add_worker("a", ["default"], seconds_ago=worker_age)
    if case != "reaper never ran":
        record_reaper(seconds_ago=600 if case == "reaper stopped" else 1)
    if case == "old ready job":
        Job.objects.update(enqueued_at=timezone.now() - timedelta(minutes=10))
    assert health("--max-ready-age", "300", "--max-reaper-age", "60")[0] == code
    assert f"UNHEALTHY: {reason}" in capsys.readouterr().err


def test_a_queue_with_ready_jobs_and_no_live_worker_serving_it_fails_health(capsys):
    add_worker("a", ["default"])
    add_worker("b", ["emails"], seconds_ago=600)  # killed: stale
    record_reaper()
    noop.using(queue_name="emails").enqueue()
    assert health()[0] == 10
    assert "UNHEALTHY: queue emails: 1 ready job(s) and no live worker serves it" in (
        capsys.readouterr().err
    )
    queues.pause("emails")
    assert health()[0] == 0


def test_a_paused_queue_may_age_without_failing_health(capsys):
    add_worker("a", ["default"])
    record_reaper()
    noop.using(queue_name="reports").enqueue()
    Job.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))
    assert health()[0] == 4
    queues.pause("reports")
    assert health()[0] == 0


def test_several_problems_exit_with_the_first_and_print_all(manage_py, child_env):
    noop.enqueue()
    Job.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))
    done = subprocess.run(
        [*manage_py, "skipqueue_health"], env=child_env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["UNHEALTHY"] * 3
    assert "no live worker" in lines[0] and "oldest ready" in lines[1] and "never run" in lines[2]


@pytest.mark.mysql
@pytest.mark.slow
def test_status_reads_do_not_grow_with_the_history():
    """Figures for a queue with a big history read about as many rows as the backlog."""
    insert_jobs(300, status="ready")
    insert_jobs(50, status="claimed")
    add_worker("a", ["default"])
    baseline = handler_reads(lambda: queue_status("default", QUEUES))
    insert_jobs(200_000, status="succeeded", finished_seconds_ago=60)
    insert_jobs(20_000, status="failed", finished_seconds_ago=60)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE skipqueue_job")
    reads = handler_reads(lambda: queue_status("default", QUEUES, cap=1000))
    # Failed is counted up to the cap, then estimated: 1,001 index entries read into a derived
    # table and read back, never the 20,000 failed or the 200,000 succeeded rows.
    assert reads < baseline + 2 * 1001 + 200, (baseline, reads)


@pytest.mark.mysql
def test_status_reads_do_not_grow_with_the_ready_backlog():
    """Queue discovery and the oldest ready job seek the index; they do not read the backlog."""
    insert_jobs(300, status="ready", queue_name="default")
    insert_jobs(300, status="ready", queue_name="unlisted")
    baseline = handler_reads(lambda: queue_status("default", QUEUES, cap=1000))
    insert_jobs(60_000, status="ready", queue_name="default")
    insert_jobs(60_000, status="ready", queue_name="unlisted")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE skipqueue_job")
    report = queue_status("default", QUEUES, cap=1000)
    assert "unlisted" in [queue.name for queue in report.queues]
    reads = handler_reads(lambda: queue_status("default", QUEUES, cap=1000))
    # Ready is counted up to the cap per queue; nothing else grows with the backlog.
    assert reads < baseline + 2 * 2 * 1001 + 200, (baseline, reads)
