"""The job page: formatted JSON, escaped tracebacks, timeline, owner and lease."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from django_skipqueue.models import JobStatus
from tests.support.admin import job_url, make_job

pytestmark = [pytest.mark.django_db, pytest.mark.vendor_neutral]

INJECTED = '<img src=x onerror="alert(1)"><script>alert("x")</script>'


def test_arguments_result_and_errors_are_formatted_json_and_escaped(admin_client):
    job = make_job(
        JobStatus.FAILED,
        args=[INJECTED, 2],
        kwargs={"to": "a@example.com", "nested": {"html": "<b>bold</b>"}},
        errors=[{"exception_class_path": "x.<i>Err</i>", "traceback": f"Traceback\n{INJECTED}\n"}],
    )
    html = admin_client.get(job_url(job)).content.decode()

    assert INJECTED not in html and "<b>bold</b>" not in html and "<i>Err</i>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert (
        "&quot;nested&quot;: {\n    &quot;html&quot;: &quot;&lt;b&gt;bold&lt;/b&gt;&quot;" in html
    )
    assert '<pre class="skipqueue-traceback">Traceback\n&lt;img src=x' in html
    assert "x.&lt;i&gt;Err&lt;/i&gt;" in html


def test_each_error_is_numbered_and_a_result_is_shown(admin_client):
    failed = make_job(JobStatus.FAILED)
    html = admin_client.get(job_url(failed)).content.decode()
    assert html.count('class="skipqueue-error"') == 3
    assert "3. <code>builtins.ValueError</code>" in html
    done = make_job(JobStatus.SUCCEEDED, return_value={"sum": 3})
    assert "&quot;sum&quot;: 3" in admin_client.get(job_url(done)).content.decode()


def test_timeline_owner_and_lease_of_a_running_job(admin_client):
    now = timezone.now()
    job = make_job(
        JobStatus.CLAIMED,
        enqueued_at=now - timedelta(seconds=90),
        started_at=now - timedelta(seconds=30),
        last_attempted_at=now - timedelta(seconds=30),
        lease_until=now + timedelta(seconds=45),
        owner="host-a:123:abcd",
        worker_ids=["host-b:9:ffff"],
    )
    html = admin_client.get(job_url(job)).content.decode()
    for text in (
        "Enqueued",
        "Started",
        "60.0 s",
        "host-a:123:abcd",
        "host-b:9:ffff",
        "expires in",
    ):
        assert text in html, text
    assert "Now (database clock)" in html and "expires in" in html
    expired = make_job(JobStatus.CLAIMED, lease_until=now - timedelta(seconds=10))
    assert "ago)" in admin_client.get(job_url(expired)).content.decode()


def test_the_page_offers_the_actions_the_user_may_run(admin_client):
    html = admin_client.get(job_url(make_job(JobStatus.FAILED))).content.decode()
    assert "Retry this failed job" in html
    assert "Delete selected finished jobs" not in html, "deletion has its own guarded page"
