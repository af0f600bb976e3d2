"""The worker's parts without a real process: backoffs, metrics, owner ids, tracebacks."""

from __future__ import annotations

import random

import pytest

from django_skipqueue.exceptions import error_record, trim
from django_skipqueue.models import Job
from django_skipqueue.monitoring.metrics import (
    CLAIM_LATENCY_BUCKETS_MS,
    Metrics,
    bucket_of,
    empty_histogram,
    histogram_percentile,
    merge_histograms,
)
from django_skipqueue.states import retry_delay
from django_skipqueue.worker.claimer import FIRST_IDLE_PAUSE, IdleBackoff
from django_skipqueue.worker.owner import owner_id, pid_of


def test_owner_ids_are_unique_per_process_start_and_name_the_pid():
    first, second = owner_id(), owner_id()
    assert first != second
    assert pid_of(first) == pid_of(second) and pid_of(first) > 0
    assert pid_of(owner_id("abcd", pid=4242)) == 4242
    assert pid_of("not an owner") is None


def test_histogram_buckets_have_documented_bounds():
    assert bucket_of(0.1) == 0
    assert bucket_of(0.5) == 0  # a bound belongs to its own bucket
    assert bucket_of(0.6) == 1
    assert bucket_of(1e9) == len(CLAIM_LATENCY_BUCKETS_MS)  # the overflow count
    assert len(empty_histogram()) == len(CLAIM_LATENCY_BUCKETS_MS) + 1


def test_histogram_percentiles_merge_across_rows():
    a, b = empty_histogram(), empty_histogram()
    a[bucket_of(0.8)] += 90  # 90 fast claims (<= 1 ms)
    b[bucket_of(30)] += 10  # 10 slow ones (<= 50 ms)
    merged = merge_histograms([a, b])
    assert histogram_percentile(merged, 0.5) == 1
    assert histogram_percentile(merged, 0.95) == 50
    assert histogram_percentile(empty_histogram(), 0.5) is None


def test_metrics_count_per_queue_minute_and_totals():
    metrics = Metrics()
    metrics.claim_query("default", 0.7, claimed=3)
    metrics.claim_query("emails", 12.0, claimed=0)
    metrics.count("default", "succeeded", 2)
    assert metrics.totals["claimed"] == 3 and metrics.totals["claim_queries"] == 2
    rows = {queue: row for _, queue, row in metrics.dirty_rows()}
    assert rows["default"].counts["succeeded"] == 2
    assert rows["emails"].histogram[bucket_of(12.0)] == 1
    p50, p95 = metrics.claim_percentiles()
    assert p50 == 0.7 and p95 == 12.0


def test_idle_backoff_doubles_to_its_cap_and_resets_on_work():
    backoff = IdleBackoff(cap=1.0)
    pauses = []
    for _ in range(12):
        backoff.claimed(0, 4)
        pauses.append(backoff.pause)
    assert pauses[0] == FIRST_IDLE_PAUSE
    assert pauses == sorted(pauses) and pauses[-1] == 1.0
    backoff.claimed(4, 4)
    assert backoff.pause == 0.0
    backoff.claimed(1, 4)  # some work: poll again soon
    assert backoff.pause == FIRST_IDLE_PAUSE


def test_retry_delay_is_exponential_with_jitter_and_ends_with_the_attempts(settings):
    settings.SKIPQUEUE_RETRY_BACKOFF_MAX = 50
    random.seed(7)
    job = Job(attempts=1, max_attempts=5)
    delays = []
    for attempt in range(1, 5):
        job.attempts = attempt
        delays.append(retry_delay(job, 2.0))
    for attempt, delay in enumerate(delays, start=1):
        full = 2.0 * 2 ** (attempt - 1)
        assert full / 2 <= delay <= full
    job.attempts = 5
    assert retry_delay(job, 2.0) is None
    job.attempts = 1
    assert retry_delay(job, 0) == 0.0
    job.attempts = 4
    assert retry_delay(job, 100.0) <= 50


def test_long_tracebacks_keep_both_ends(settings):
    settings.SKIPQUEUE_MAX_TRACEBACK_CHARS = 200
    text = "HEAD" + "x" * 1000 + "TAIL"
    trimmed = trim(text)
    assert len(trimmed) <= 200
    assert trimmed.startswith("HEAD") and trimmed.endswith("TAIL") and "elided" in trimmed


def test_error_record_names_the_exception_class():
    try:
        raise KeyError("missing")
    except KeyError as error:
        record = error_record(error)
    assert record["exception_class_path"] == "builtins.KeyError"
    assert "missing" in record["traceback"]


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_percentile_of_a_single_bucket_is_its_bound(fraction):
    histogram = empty_histogram()
    histogram[3] = 5
    assert histogram_percentile(histogram, fraction) == CLAIM_LATENCY_BUCKETS_MS[3]


@pytest.mark.django_db
def test_a_paused_queue_costs_no_claim_query_and_counts_none():
    from django_skipqueue import queues
    from django_skipqueue.worker.claimer import Claimer
    from django_skipqueue.worker.options import WorkerOptions
    from tests.support.tasks import noop

    noop.enqueue()
    noop.using(queue_name="emails").enqueue()
    queues.pause("emails")
    queues.forget()
    metrics = Metrics()
    claimer = Claimer(WorkerOptions(queues=("emails", "default")), "w", metrics)
    claimed = claimer.claim(5)
    assert [job.queue_name for job in claimed] == ["default"]
    assert metrics.totals["claim_queries"] == 1
    assert "emails" not in {queue for _, queue, _ in metrics.dirty_rows()}
