"""The job list: capped counts, filters and search that stay on indexes, no payload reads."""

from __future__ import annotations

import re
from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_skipqueue.admin import listing
from django_skipqueue.models import Job, JobStatus
from tests.support.admin import changelist_url, make_job

pytestmark = pytest.mark.django_db


def listed(client, query: str = "") -> list[int]:
    response = client.get(changelist_url(query))
    assert response.status_code == 200
    return [job.pk for job in response.context["cl"].result_list]


def test_the_list_never_counts_the_whole_table_nor_reads_payloads(admin_client):
    for status in JobStatus.values:
        make_job(status)
    with CaptureQueriesContext(connection) as queries:
        assert len(listed(admin_client)) == len(JobStatus.values)
    job_queries = [q["sql"] for q in queries.captured_queries if "skipqueue_job" in q["sql"]]
    counts = [sql for sql in job_queries if "COUNT(" in sql.upper()]
    assert counts and all("LIMIT" in sql.upper() for sql in counts), counts
    page = next(sql for sql in job_queries if "enqueued_at" in sql and "ORDER BY" in sql)
    # Failed rows' errors are read in the database only, for their last class path.
    page, last_error = re.subn(r"CASE WHEN .*? END AS [`\"]last_error_class[`\"]", "", page)
    assert last_error == 1, page
    for heavy in ("args", "kwargs", "errors", "return_value", "worker_ids"):
        assert not re.search(rf"\.[`\"]{heavy}[`\"]", page), (heavy, page)


def test_the_list_shows_a_failed_jobs_last_error_class_and_a_scheduled_jobs_run_time(
    admin_client,
):
    errors = [
        {"exception_class_path": "builtins.ValueError", "traceback": "..."},
        "a former error stored as text",
        {"exception_class_path": "smtplib.SMTPServerDisconnected", "traceback": "..."},
    ]
    failed = make_job(JobStatus.FAILED, errors=errors)
    no_error = make_job(JobStatus.FAILED, errors=[])
    retrying = make_job(JobStatus.SCHEDULED, errors=errors[:1])
    html = admin_client.get(changelist_url()).content.decode()
    rows = dict(re.findall(r'_selected_action" value="(\d+)".*?field-state">(.*?)</td>', html))
    last = '<span title="smtplib.SMTPServerDisconnected">SMTPServerDisconnected</span>'
    assert last in rows[str(failed.pk)]
    assert "note" not in rows[str(no_error.pk)]
    run_after = retrying.run_after.astimezone(UTC)
    assert f"runs {run_after:%Y-%m-%d %H:%M:%S}" in rows[str(retrying.pk)]


def test_past_the_cap_the_list_says_more_than(admin_client, monkeypatch):
    monkeypatch.setattr(listing.CappedPaginator, "cap", 5)
    for _ in range(8):
        make_job()
    response = admin_client.get(changelist_url())
    assert response.context["cl"].result_count == 5
    html = response.content.decode()
    assert "More than 5 jobs (about" in html and "count capped" in html
    assert "more than 5 results" not in html, "no filter or search: no result count shown"
    make_job(JobStatus.FAILED)
    exact = admin_client.get(changelist_url("status__exact=failed")).content.decode()
    assert "count capped" not in exact and "1 job" in exact


def test_filters_by_status_queue_and_task(admin_client):
    failed_emails = make_job(JobStatus.FAILED, queue_name="emails")
    failed_default = make_job(JobStatus.FAILED, task_path="tests.support.tasks.noop")
    ready = make_job(JobStatus.READY, queue_name="emails")
    assert listed(admin_client, "status__exact=failed") == [failed_default.pk, failed_emails.pk]
    assert listed(admin_client, "status__exact=failed&queue=emails") == [failed_emails.pk]
    assert listed(admin_client, "queue=emails") == [ready.pk, failed_emails.pk]
    assert listed(admin_client, "task=tests.support.tasks.noop") == [failed_default.pk]


def test_the_queue_and_task_filters_offer_configured_queues_and_recent_tasks(admin_client):
    make_job(task_path="tests.support.tasks.noop")
    make_job(task_path="testproject.demo.tasks.add")
    filters = {f.title: f for f in admin_client.get(changelist_url()).context["cl"].filter_specs}
    assert [value for value, _ in filters["queue"].lookup_choices] == [
        "default", "high", "emails", "reports",
    ]  # fmt: skip
    assert [value for value, _ in filters["task (newest 100,000 jobs)"].lookup_choices] == [
        "testproject.demo.tasks.add", "tests.support.tasks.noop",
    ]  # fmt: skip


def test_the_date_filter_reads_an_id_range_found_by_bisection(admin_client):
    now = timezone.now()
    old = [make_job(enqueued_at=now - timedelta(days=10, minutes=-i)) for i in range(20)]
    day_old = make_job(enqueued_at=now - timedelta(hours=20))
    new = [make_job(enqueued_at=now - timedelta(minutes=30 - i)) for i in range(20)]

    newest_first = [job.pk for job in reversed(new)]
    assert listed(admin_client, "enqueued=1h") == newest_first
    assert listed(admin_client, "enqueued=24h") == [*newest_first, day_old.pk]
    assert listed(admin_client, "enqueued=older-7d") == [job.pk for job in reversed(old)]

    first_new = listing.first_id_enqueued_since(Job.objects.all(), now - timedelta(hours=1))
    assert old[-1].pk < first_new <= new[0].pk
    assert listing.first_id_enqueued_since(Job.objects.all(), now + timedelta(days=1)) is None


def test_search_by_id_key_and_task_path(admin_client):
    keyed_live = make_job(JobStatus.READY, idempotency_key="invoice-42")
    keyed_failed = make_job(JobStatus.FAILED, idempotency_key="invoice-42")
    other = make_job(JobStatus.SUCCEEDED, task_path="testproject.demo.tasks.add")

    assert listed(admin_client, f"q={other.pk}") == [other.pk]
    assert listed(admin_client, f"q=%23{other.pk}") == [other.pk]
    assert listed(admin_client, "q=invoice-42") == [keyed_failed.pk, keyed_live.pk]
    assert listed(admin_client, "q=key:invoice-42") == [keyed_failed.pk, keyed_live.pk]
    assert listed(admin_client, "q=testproject.demo") == [other.pk]
    assert listed(admin_client, "q=task:testproject.demo.tasks") == [other.pk]
    assert listed(admin_client, "q=nothing-like-it") == []


def test_task_matches_are_looked_for_among_the_newest_jobs_only(admin_client, monkeypatch):
    monkeypatch.setattr(listing, "TASK_SCAN_WINDOW", 3)
    old = make_job(task_path="shop.tasks.receipt")
    recent = [make_job(task_path="shop.tasks.receipt") for _ in range(3)]
    newest_first = [job.pk for job in reversed(recent)]
    assert listed(admin_client, "task=shop.tasks.receipt") == newest_first
    assert listed(admin_client, "q=task:shop.tasks") == newest_first
    assert listed(admin_client, "q=shop.tasks.receipt") == newest_first
    assert old.pk not in listed(admin_client, "q=shop.tasks")


def test_search_by_key_reads_through_indexes(admin_client):
    make_job(JobStatus.FAILED, idempotency_key="k1")
    with CaptureQueriesContext(connection) as queries:
        listing.ids_with_key(Job.objects.all(), "k1")
    live, history = (q["sql"] for q in queries.captured_queries)
    assert "active_key" in live
    assert "status" in history and "IN" in history, "the claim index's status prefix"
    assert "ORDER BY" not in history, "an ORDER BY id would walk the primary key instead"


def test_only_the_id_column_sorts(admin_client):
    response = admin_client.get(changelist_url())
    sortable = [h for h in response.context["result_headers"] if h["sortable"]]
    assert [h["text"] for h in sortable] == ["id"]
