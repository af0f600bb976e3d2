"""The metrics reference against what the code exports, and each figure against the database.

docs/reference/metrics.md must list exactly the metrics the view's collector and the worker
processes' registry export, each with its type and labels. The view's gauges must equal the
rows (depth per status, ages, paused queues, overdue scheduled jobs, workers, the outbox's and
the reservation pools' figures), and the process counters of a real worker must equal the
outcomes its rows record (succeeded, retried, failed, lost leases, idle polls).
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from django_skipqueue import queues, reservations
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import Job, WorkerProcess
from django_skipqueue.monitoring import metrics
from django_skipqueue.monitoring.exporter import ProcessMetrics
from django_skipqueue.monitoring.prometheus import DatabaseCollector
from django_skipqueue.monitoring.stats import DEPTH_STATUSES
from django_skipqueue.outbox import Message, publish, publish_many
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage
from django_skipqueue.reservations.models import Unit
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from tests.support import worker_tasks as wt
from tests.support.bulkfill import insert_jobs
from tests.support.handler_reads import handler_reads
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "figures-token"
#: SKIPQUEUE_STATUS_COUNT_CAP for the big-table scrape.
CAP = 1000
REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "metrics.md"
#: Gauges absent where the server hides them (and on PostgreSQL and SQLite).
SERVER_GAUGES = {
    "skipqueue_database_history_list_length",
    "skipqueue_database_oldest_transaction_age_seconds",
}


def documented() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Name -> (type, labels) of every row of the reference's tables."""
    rows = re.findall(r"^\| `(skipqueue_\w+)` \| (\w+) \| ([^|]*) \|", REFERENCE.read_text(), re.M)
    return {name: (kind, tuple(re.findall(r"`(\w+)`", labels))) for name, kind, labels in rows}


def scrape(client) -> dict:
    """The view's families by name, parsed from its text as Prometheus reads it."""
    response = client.get(reverse("skipqueue_metrics"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def value(families: dict, name: str, **labels: str) -> float:
    [found] = [s.value for s in families[name].samples if s.labels == labels]
    return found


def exported_by_the_view(families: dict) -> dict[str, tuple[str, tuple[str, ...]]]:
    found = {}
    for name, family in families.items():
        assert family.samples, f"{name} has no sample"
        found[name] = (family.type, tuple(family.samples[0].labels))
    return found


def exported_by_the_workers(tmp_path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The metrics of ProcessMetrics, as the exposition names them (counters end in _total)."""
    found = {}
    for metric in vars(ProcessMetrics(str(tmp_path))).values():
        if isinstance(metric, MetricWrapperBase):
            name = metric._name + ("_total" if metric._type == "counter" else "")
            found[name] = (metric._type, tuple(metric._labelnames))
    return found


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.SKIPQUEUE_METRICS_TOKEN = TOKEN


def test_the_reference_lists_every_exported_metric_with_its_type_and_labels(client, tmp_path):
    exported = {**exported_by_the_view(scrape(client)), **exported_by_the_workers(tmp_path)}
    reference = documented()
    assert {name: reference.get(name) for name in exported} == exported
    missing = set(reference) - set(exported)
    assert missing <= (SERVER_GAUGES if connection.vendor != "mysql" else set()), missing
    assert len(reference) >= 19


def test_the_views_gauges_equal_the_database(client):
    insert_jobs(4, status="ready")
    insert_jobs(2, status="claimed")
    insert_jobs(3, status="failed", finished_seconds_ago=60)
    insert_jobs(5, status="scheduled", run_after_seconds=600)
    insert_jobs(2, status="scheduled", run_after_seconds=-90)  # due: promotion is behind
    insert_jobs(1, status="ready", queue_name="emails")
    now = read_db_now("default")
    Job.objects.filter(queue_name="emails").update(run_after=now - timedelta(minutes=5))
    queues.pause("reports")
    for owner, seconds_ago in (("w-live", 0), ("w-stale", 3600)):
        WorkerProcess.objects.create(
            owner=owner, role="worker", hostname="h", pid=1, queues=["default"],
            started_at=now - timedelta(hours=2),
            last_heartbeat_at=now - timedelta(seconds=seconds_ago),
        )  # fmt: skip
    publish("orders", {"n": 1}, key="a")
    publish("orders", {"n": 2}, key="b")
    publish("orders", {"n": 3}, key="c")
    OutboxMessage.objects.filter(key="b").update(status=MessageStatus.DEAD)
    OutboxMessage.objects.filter(key="c").update(status=MessageStatus.RETRY)
    reservations.restock(7, 1, 10)
    reservations.reserve(7, 1, 3, holder="cart-a", ttl=600)
    time.sleep(1.1)  # ages grow past a second

    families = scrape(client)
    for queue in ("default", "emails", "high", "reports"):
        for status in DEPTH_STATUSES:
            rows = Job.objects.filter(queue_name=queue, status=status).count()
            assert value(families, "skipqueue_jobs", queue=queue, status=status) == rows
        paused = float(queue == "reports")
        assert value(families, "skipqueue_queue_paused", queue=queue) == paused
    assert 5 * 60 <= value(families, "skipqueue_oldest_ready_age_seconds", queue="emails") < 400
    assert 1 <= value(families, "skipqueue_oldest_ready_age_seconds", queue="default") < 120
    assert value(families, "skipqueue_oldest_ready_age_seconds", queue="high") == 0
    assert 90 <= value(families, "skipqueue_oldest_due_scheduled_age_seconds") < 200
    assert value(families, "skipqueue_workers", state="live") == 1
    assert value(families, "skipqueue_workers", state="stale") == 1
    for status in MessageStatus.values:
        rows = OutboxMessage.objects.filter(status=status).count()
        assert value(families, "skipqueue_outbox_messages", status=status) == rows == 1
    assert 1 <= value(families, "skipqueue_outbox_oldest_unsent_age_seconds") < 120
    free = Unit.objects.filter(reserved_by__isnull=True).count()
    held = Unit.objects.filter(reserved_by__isnull=False).count()
    assert (free, held) == (7, 3)
    assert value(families, "skipqueue_reservation_units", state="free") == free
    assert value(families, "skipqueue_reservation_units", state="held") == held


def samples(metric, suffix: str = "_total") -> dict[tuple[str, ...], float]:
    """A process metric's samples ending in ``suffix``, by their label values."""
    found = {}
    for family in metric.collect():
        for sample in family.samples:
            if sample.name.endswith(suffix):
                found[tuple(sample.labels.values())] = sample.value
    return found


def test_the_process_counters_equal_the_outcomes_the_rows_record(
    monkeypatch, tmp_path, settings, close_thread_connections
):
    settings.SKIPQUEUE_RELEASE_JOB_CONNECTIONS = True  # the job threads' too, for the flush
    succeeding = [noop.enqueue().id for _ in range(3)]
    failing = wt.always_fail.enqueue().id
    taken = wt.loses_its_lease.enqueue().id
    exporter = ProcessMetrics(str(tmp_path))
    monkeypatch.setattr(metrics, "exporter", exporter)
    options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False)
    Worker(options, owner=owner_id()).run()

    job = Job.objects.get(pk=failing)
    assert job.status == "failed" and job.attempts >= 2
    assert Job.objects.filter(pk__in=succeeding, status="succeeded").count() == 3
    attempts = samples(exporter.attempts)
    noop_path, fail_path = "tests.support.tasks.noop", job.task_path
    assert attempts[("default", noop_path, "succeeded")] == 3
    assert attempts[("default", fail_path, "retried")] == job.attempts - 1
    assert attempts[("default", fail_path, "failed")] == 1
    lost = Job.objects.get(pk=taken)
    assert (lost.status, lost.owner) == ("claimed", "another-worker")  # not written over
    assert attempts[("default", lost.task_path, "lost_lease")] == 1
    assert sum(attempts.values()) == 3 + job.attempts + 1
    claimed = samples(exporter.claimed)
    expected = {("default", noop_path): 3, ("default", fail_path): job.attempts}
    assert claimed == {**expected, ("default", lost.task_path): 1}
    assert sum(samples(exporter.duration, "_count").values()) == 3 + job.attempts + 1
    idle = samples(exporter.idle)
    assert idle[("default",)] >= 1  # the burst ends on a claim that finds nothing
    batches = samples(exporter.batch, "_count")[("default",)]
    assert batches == sum(samples(exporter.claim_latency, "_count").values())
    assert batches >= idle[("default",)] + 1


@pytest.mark.mysql
@pytest.mark.slow
def test_a_scrape_reads_about_as_many_rows_on_a_big_table(settings):
    """Every gauge of the view is capped or seeks an index: a scrape of tables grown by
    hundreds of thousands of rows reads a bounded number of rows more, not the backlog."""
    settings.SKIPQUEUE_STATUS_COUNT_CAP = CAP
    collector = DatabaseCollector("default", ["default"])
    insert_jobs(300, status="ready")
    insert_jobs(300, status="scheduled", run_after_seconds=-60)
    publish_many([Message("orders", {"n": n}, key=f"k{n}") for n in range(300)])
    reservations.restock(1, 1, 300)
    baseline = handler_reads(lambda: list(collector.collect()))
    insert_jobs(100_000, status="succeeded", finished_seconds_ago=60)
    insert_jobs(30_000, status="scheduled", run_after_seconds=-120)  # due, not promoted
    insert_jobs(30_000, status="scheduled", run_after_seconds=3600)
    for start in range(0, 60_000, 10_000):
        publish_many(
            [Message("orders", {"n": n}, key=f"k{n}") for n in range(start, start + 10_000)]
        )
    oldest_ids = OutboxMessage.objects.order_by("id").values_list("id", flat=True)[:30_000]
    OutboxMessage.objects.filter(id__lte=list(oldest_ids)[-1]).update(status=MessageStatus.DEAD)
    for item in range(2, 22):
        reservations.restock(item, 1, 1000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE skipqueue_job, skipqueue_outbox, skipqueue_unit")
    reads = handler_reads(lambda: list(collector.collect()))
    # Counted up to the cap, then estimated: scheduled jobs, pending and dead messages, free
    # units, each at most CAP + 1 index entries read into a derived table and read back.
    assert reads < baseline + 4 * 2 * (CAP + 1) + 500, (baseline, reads)


@pytest.mark.mysql
def test_the_database_errors_counter_counts_a_killed_connection(
    monkeypatch, tmp_path, settings, close_thread_connections
):
    """A job kills the other sessions on the database, the worker loop's among them: the
    loop's next statement fails, is counted, and the worker reconnects and finishes."""
    settings.SKIPQUEUE_RELEASE_JOB_CONNECTIONS = True
    killer = wt.kill_other_sessions.enqueue().id
    after = [noop.enqueue().id for _ in range(3)]
    exporter = ProcessMetrics(str(tmp_path))
    monkeypatch.setattr(metrics, "exporter", exporter)
    options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False)
    Worker(options, owner=owner_id()).run()

    assert Job.objects.get(pk=killer).return_value >= 1
    assert samples(exporter.db_errors)[("worker",)] >= 1
    done = Job.objects.filter(pk__in=[killer, *after], status="succeeded").count()
    assert done == 4
