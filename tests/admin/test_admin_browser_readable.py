"""What a new operator reads in the admin, checked in Chromium: order, contrast, fit, hints.

Same browser and live server as tests/admin/test_admin_browser.py (its fixtures are reused).
Colours are read from the rendered page (``getComputedStyle``), never from the stylesheet's text.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from django_skipqueue.models import JobStatus
from tests.admin.test_admin_browser import DASHBOARD, browser, log_in, page, superuser
from tests.support.admin import add_worker, make_job

__all__ = ["browser", "page"]  # fixtures, imported to be found by pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: WCAG 2 AA: normal text needs a contrast of 4.5:1 with its background.
MINIMUM_CONTRAST = 4.5
#: Text colour and the first opaque background behind it, as rendered.
COLOURS_JS = """element => {
    let node = element, background = null;
    while (node && background === null) {
        const colour = getComputedStyle(node).backgroundColor;
        if (!/^rgba\\(.*, 0\\)$/.test(colour) && colour !== 'transparent') background = colour;
        node = node.parentElement;
    }
    return [getComputedStyle(element).color, background || 'rgb(255, 255, 255)'];
}"""


def luminance(css: str) -> float:
    """Relative luminance (WCAG 2) of an ``rgb()``/``rgba()`` colour."""
    red, green, blue = (int(part) for part in re.findall(r"[\d.]+", css)[:3])

    def linear(channel: int) -> float:
        value = channel / 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(foreground: str, background: str) -> float:
    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def rendered_contrast(tab, selector: str) -> tuple[float, str, str]:
    foreground, background = tab.locator(selector).evaluate(COLOURS_JS)
    return contrast(foreground, background), foreground, background


def test_luminance_and_contrast_match_the_wcag_reference_values():
    assert contrast("rgb(0, 0, 0)", "rgb(255, 255, 255)") == pytest.approx(21)
    assert contrast("rgb(118, 118, 118)", "rgb(255, 255, 255)") == pytest.approx(4.54, abs=0.01)
    assert contrast("rgb(46, 125, 50)", "rgb(65, 118, 144)") < 1.1  # the former legend


def test_a_retried_jobs_timeline_is_in_order_with_no_negative_duration(page):
    start = timezone.now() - timedelta(minutes=5)
    job = make_job(
        JobStatus.SUCCEEDED,
        enqueued_at=start,
        started_at=start + timedelta(seconds=1),
        # Set by the last retry: due after the first start, before the last attempt.
        run_after=start + timedelta(seconds=3, milliseconds=854),
        last_attempted_at=start + timedelta(seconds=3, milliseconds=900),
        finished_at=start + timedelta(seconds=4),
        attempts=3,
    )
    superuser()
    log_in(page, "root")
    page.goto(f"/admin/django_skipqueue/job/{job.pk}/change/")
    page.shots.take("timeline")
    rows = page.locator(".field-timeline tbody tr").evaluate_all(
        "rows => rows.map(row => [...row.cells].map(cell => cell.innerText.trim()))"
    )
    labels = [row[0] for row in rows]
    moments = [datetime.strptime(row[1], "%Y-%m-%d %H:%M:%S.%f") for row in rows]
    assert moments == sorted(moments), rows
    assert labels == ["Enqueued", "Started", "Retry due", "Last attempt started", "Finished"]
    assert [row[2] for row in rows] == ["", "1.0 s", "2.9 s", "46 ms", "100 ms"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_throughput_legend_is_readable_on_its_background(page, scheme):
    superuser()
    log_in(page, "root")
    page.emulate_media(color_scheme=scheme)
    page.goto(DASHBOARD)
    page.shots.take(f"legend-{scheme}")
    for selector in (".skipqueue-legend-ok", ".skipqueue-legend-failed"):
        ratio, foreground, background = rendered_contrast(page, selector)
        assert ratio >= MINIMUM_CONTRAST, f"{selector}: {foreground} on {background}: {ratio:.2f}"


def test_a_queue_with_ready_jobs_and_no_live_worker_says_nobody_serves_it(page):
    make_job(JobStatus.READY, queue_name="reports")
    make_job(JobStatus.READY, queue_name="emails")
    add_worker("host-1:101:live", ["emails"], heartbeat_ago=1)
    add_worker("host-1:102:stale", ["reports"], heartbeat_ago=900)
    superuser()
    log_in(page, "root")
    page.goto(DASHBOARD)
    page.shots.take("unserved")
    reports = page.locator('tr[data-queue="reports"] td[data-field="state"]')
    assert reports.inner_text() == "no live worker"
    assert "1 ready job waits" in reports.locator("span").get_attribute("title")
    assert page.locator('tr[data-queue="reports"] .skipqueue-running').count() == 0
    emails = 'tr[data-queue="emails"] td[data-field="state"]'
    assert page.inner_text(emails) == "running"
    for queue in ("reports", "emails"):
        state = f'tr[data-queue="{queue}"] td[data-field="state"] span'
        ratio, *colours = rendered_contrast(page, state)
        assert ratio >= MINIMUM_CONTRAST, (queue, colours)


def test_the_job_list_fits_a_1400_pixel_window(page):
    long_path = "shop.notifications.tasks.send_monthly_statement_with_attachments"
    for status in ("ready", "scheduled", "claimed", "succeeded", "failed"):
        make_job(status, task_path=long_path, queue_name="reports")
    superuser()
    log_in(page, "root")
    assert page.viewport_size["width"] == 1400
    page.goto("/admin/django_skipqueue/job/")
    page.shots.take("list-1400")
    sizes = page.evaluate(
        """() => ({page: document.documentElement.scrollWidth, window: window.innerWidth,
        results: document.querySelector('.results').scrollWidth,
        shown: document.querySelector('.results').clientWidth,
        right: document.querySelector('#result_list').getBoundingClientRect().right})"""
    )
    assert sizes["page"] <= sizes["window"], sizes
    assert sizes["results"] <= sizes["shown"], sizes
    assert sizes["right"] <= sizes["window"], sizes


def test_the_job_list_shows_a_failed_jobs_error_and_a_scheduled_jobs_run_time(page):
    failed = make_job(
        JobStatus.FAILED,
        errors=[
            {"exception_class_path": "builtins.ValueError", "traceback": "..."},
            {"exception_class_path": "smtplib.SMTPServerDisconnected", "traceback": "..."},
        ],
    )
    due = timezone.now().replace(microsecond=0) + timedelta(hours=2)
    scheduled = make_job(JobStatus.SCHEDULED, run_after=due)
    ready = make_job(JobStatus.READY)
    superuser()
    log_in(page, "root")
    page.goto("/admin/django_skipqueue/job/")
    page.shots.take("list-details")

    def note(job):
        row = page.locator(f'#result_list tr:has(input[value="{job.pk}"])')
        return row.locator("td.field-state .skipqueue-status-note")

    assert note(failed).inner_text() == "SMTPServerDisconnected"
    assert note(failed).locator("span").get_attribute("title") == "smtplib.SMTPServerDisconnected"
    assert note(scheduled).inner_text() == f"runs {due.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    assert note(ready).count() == 0
