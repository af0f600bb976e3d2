"""The queue dashboard: the numbers of skipqueue_status, charts, workers, pause and resume."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import ADDITION, DELETION, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_skipqueue import queues
from django_skipqueue.models import JobStatus, QueuePause
from django_skipqueue.monitoring.stats import queue_status
from tests.support.admin import (
    add_minutes,
    add_worker,
    dashboard_url,
    make_job,
    messages_of,
    staff_user,
)

pytestmark = pytest.mark.django_db
PAUSE_URL = "admin:django_skipqueue_pause"


@pytest.fixture(autouse=True)
def fresh_pause_cache():
    queues.forget()
    yield
    queues.forget()


def cell(html: str, queue: str, status: str) -> str:
    row = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', html, re.S)
    assert row, queue
    found = re.search(rf'data-status="{status}"><a [^>]*>([^<]*)</a>', row.group(1))
    assert found, (queue, status)
    return found.group(1)


def test_the_dashboard_shows_what_skipqueue_status_reports(admin_client):
    for _ in range(3):
        make_job(JobStatus.READY, queue_name="emails")
    make_job(JobStatus.FAILED, queue_name="emails")
    make_job(JobStatus.CLAIMED)
    make_job(JobStatus.SCHEDULED, queue_name="high")
    queues.pause("reports", reason="maintenance window", by="ops")
    add_worker("live-1", ["emails"], heartbeat_ago=2)

    html = admin_client.get(dashboard_url()).content.decode()

    report = queue_status("default", ["default", "high", "emails", "reports"])
    for queue in report.queues:
        for status, count in queue.counts.items():
            assert cell(html, queue.name, status) == str(count), (queue.name, status)
    assert (cell(html, "emails", "ready"), cell(html, "default", "claimed")) == ("3", "1")
    reports_row = re.search(r'<tr data-queue="reports">.*?</tr>', html, re.S).group(0)
    assert "paused" in reports_row and "maintenance window" in reports_row
    assert "running" in re.search(r'<tr data-queue="emails">.*?</tr>', html, re.S).group(0)
    unserved = re.search(r'<tr data-queue="high">.*?</tr>', html, re.S).group(0)
    assert "no live worker" in unserved and "running" not in unserved


def test_throughput_chart_workers_and_rates_come_from_the_workers_figures(admin_client):
    add_minutes("emails", [(10, 1), (20, 0), (30, 2)])
    add_worker("live-1", ["emails"], heartbeat_ago=2, claimed=7, succeeded=6, failed=1)
    add_worker("stale-1", ["emails"], heartbeat_ago=3600)

    html = admin_client.get(dashboard_url()).content.decode()

    chart = re.search(r'<figure data-queue="emails">.*?</figure>', html, re.S).group(0)
    assert "emails: 60 succeeded, 3 failed in the last 60 minutes" in chart
    assert chart.count('class="succeeded"') == 60 and chart.count('class="failed"') == 60
    assert "<script" not in html.split('id="skipqueue-queues"')[1], "no JavaScript charts"
    row = re.search(r'<tr data-queue="emails">.*?</tr>', html, re.S).group(0)
    assert re.search(r'data-field="workers">1 / 1<', row)
    assert re.search(r'data-field="reclaimed">1<', row)
    assert "≤1 / ≤2 ms" in row
    assert "1 live, 1 stale" in html
    assert re.search(r'<tr data-owner="stale-1" class="skipqueue-stale">', html)


def test_the_page_reloads_itself_unless_told_not_to(admin_client):
    assert (
        '<meta http-equiv="refresh" content="10">'
        in admin_client.get(dashboard_url("")).content.decode()
    )
    assert "http-equiv" not in admin_client.get(dashboard_url("refresh=0")).content.decode()


def test_the_dashboard_reads_the_jobs_table_only_through_indexes(admin_client):
    """Every read of the jobs table starts at the claim index's status prefix or at ids."""
    make_job(JobStatus.READY)
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(dashboard_url())
    on_jobs = [q["sql"] for q in queries.captured_queries if "skipqueue_job" in q["sql"]]
    assert on_jobs
    for sql in on_jobs:
        where = sql.split("WHERE", 1)[1] if "WHERE" in sql else ""
        by_id = re.search(r"\.[`\"]id[`\"] IN \(", where)
        assert "status" in where or by_id, f"a read of the jobs table off the indexes: {sql}"
        assert "COUNT(" not in sql.upper() or "LIMIT" in sql.upper(), sql


def test_the_app_index_and_the_job_list_link_to_the_dashboard(admin_client):
    url = reverse("admin:django_skipqueue_job_dashboard")
    app_index = admin_client.get(reverse("admin:app_list", args=["django_skipqueue"]))
    assert url in app_index.content.decode()
    assert (
        url in admin_client.get(reverse("admin:django_skipqueue_job_changelist")).content.decode()
    )


def test_the_dashboard_needs_the_view_permission(client):
    client.force_login(staff_user("nobody"))
    assert client.get(dashboard_url()).status_code == 403
    client.force_login(staff_user("viewer", "view_job"))
    response = client.get(dashboard_url())
    assert response.status_code == 200
    assert 'name="operation"' not in response.content.decode(), "no pause buttons"


def test_pause_and_resume_from_the_dashboard_are_reported_and_logged(admin_client):
    paused = admin_client.post(
        reverse(PAUSE_URL),
        {"queue": "emails", "backend": "default", "operation": "pause", "reason": "deploy"},
        follow=True,
    )
    assert messages_of(paused) == ["Queue emails paused: workers stop claiming from it."]
    pause = QueuePause.objects.get(queue_name="emails")
    assert (pause.reason, pause.paused_by) == ("deploy", "admin")
    entry = LogEntry.objects.get(action_flag=ADDITION)
    assert entry.object_repr == str(pause) and "deploy" in entry.change_message
    assert "Resume</button>" in paused.content.decode()

    again = admin_client.post(
        reverse(PAUSE_URL), {"queue": "emails", "operation": "pause"}, follow=True
    )
    assert messages_of(again) == ["Queue emails was already paused."]

    resumed = admin_client.post(
        reverse(PAUSE_URL), {"queue": "emails", "operation": "resume"}, follow=True
    )
    assert messages_of(resumed) == ["Queue emails resumed."]
    assert not QueuePause.objects.exists()
    assert LogEntry.objects.filter(action_flag=DELETION).count() == 1


def test_pausing_needs_its_permission_and_a_known_queue(client, admin_client):
    client.force_login(staff_user("viewer", "view_job"))
    response = client.post(reverse(PAUSE_URL), {"queue": "emails", "operation": "pause"})
    assert response.status_code == 403 and not QueuePause.objects.exists()
    assert client.get(reverse(PAUSE_URL)).status_code == 405

    unknown = admin_client.post(
        reverse(PAUSE_URL), {"queue": "nope", "operation": "pause"}, follow=True
    )
    assert "is not one of backend" in messages_of(unknown)[0]
    assert not QueuePause.objects.exists()

    client.force_login(staff_user("operator", "view_job", "pause_queue"))
    client.post(reverse(PAUSE_URL), {"queue": "emails", "operation": "pause"})
    assert QueuePause.objects.filter(queue_name="emails").exists()
