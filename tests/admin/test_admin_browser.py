"""The admin in a real browser: Debian's Chromium driven by Playwright against a live server.

Run on MariaDB (scripts/test.sh leaves browser tests out elsewhere). Browsers are never
downloaded: Playwright launches /usr/bin/chromium (``SKIPQUEUE_CHROMIUM`` overrides it).
Screenshots of each step go to test-artifacts/admin/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db.models import Sum

from django_skipqueue import queues
from django_skipqueue.models import Job, JobStatus, QueueMinute, QueuePause, WorkerProcess
from tests.support.admin import add_minutes, add_worker, make_job, staff_user

playwright = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = os.environ.get("SKIPQUEUE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "admin"
QUEUES = ("default", "high", "emails", "reports")
DASHBOARD = "/admin/django_skipqueue/job/dashboard/?refresh=0"


@pytest.fixture(scope="module")
def browser(django_db_setup, django_db_blocker) -> Iterator[object]:
    """Chromium for the module. Playwright's sync API keeps an event loop running in this
    thread, which Django takes for async code: the test's own ORM calls are allowed."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with pytest.MonkeyPatch.context() as patch, playwright.sync_playwright() as driver:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server, request):
    """A fresh browser context (no cookies) on the live server."""
    queues.forget()
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1400, "height": 900}
    )
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.shots = Shots(tab, request.node.name)
    yield tab
    context.close()
    queues.forget()


class Shots:
    """Numbered full-page screenshots of one test."""

    def __init__(self, tab, name: str) -> None:
        self.tab, self.name, self.count = tab, name, 0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(self, step: str) -> None:
        self.count += 1
        path = ARTIFACTS / f"{self.name}-{self.count:02d}-{step}.png"
        self.tab.screenshot(path=str(path), full_page=True)


def log_in(tab, username: str, password: str = "pw") -> None:
    tab.goto("/admin/login/?next=/admin/")
    tab.fill("#id_username", username)
    tab.fill("#id_password", password)
    tab.click("input[type=submit]")
    tab.wait_for_url(re.compile(r"/admin/$"))


def superuser(username: str = "root"):
    user = staff_user(username)
    user.is_superuser = True
    user.save()
    return user


def test_a_staff_user_logs_in_and_the_dashboard_matches_the_database(page):
    for status, queue, count in [
        ("ready", "emails", 4), ("ready", "default", 2), ("failed", "emails", 1),
        ("claimed", "default", 3), ("scheduled", "high", 2), ("succeeded", "default", 5),
    ]:  # fmt: skip
        for _ in range(count):
            make_job(status, queue_name=queue)
    add_minutes("emails", [(12, 1), (30, 0), (25, 2)])
    add_worker("host-1:101:live", ["emails", "default"], heartbeat_ago=1, succeeded=67)
    add_worker("host-1:102:stale", ["high"], heartbeat_ago=900)
    superuser()

    log_in(page, "root")
    page.shots.take("index")
    page.click("text=Job queue")
    page.click("#skipqueue-dashboard-link a")
    page.wait_for_selector("#skipqueue-queues")
    page.shots.take("dashboard")

    for queue in QUEUES:
        for status in ("ready", "scheduled", "claimed", "failed"):
            shown = page.inner_text(f'tr[data-queue="{queue}"] td[data-status="{status}"]')
            assert shown == str(Job.objects.filter(queue_name=queue, status=status).count())
    minutes = QueueMinute.objects.filter(queue_name="emails").aggregate(
        ok=Sum("succeeded"), failed=Sum("failed"), reclaimed=Sum("reclaimed")
    )
    label = page.get_attribute('figure[data-queue="emails"] svg', "aria-label")
    assert (
        label
        == f"emails: {minutes['ok']} succeeded, {minutes['failed']} failed in the last 60 minutes"
    )
    emails = 'tr[data-queue="emails"]'
    assert page.inner_text(f'{emails} td[data-field="reclaimed"]') == str(minutes["reclaimed"])
    assert page.inner_text(f'{emails} td[data-field="workers"]') == "1 / 0"
    assert page.locator('tr.skipqueue-stale[data-owner="host-1:102:stale"]').count() == 1
    assert WorkerProcess.objects.count() == page.locator("tr[data-owner]").count()


def test_a_paused_queue_shows_as_paused_and_resumes(page):
    make_job(JobStatus.READY, queue_name="reports")
    add_worker("host-1:101:live", ["reports", "emails"], heartbeat_ago=1)
    superuser()
    log_in(page, "root")
    page.goto(DASHBOARD)
    reports = page.locator('tr[data-queue="reports"]')
    assert reports.locator('td[data-field="state"]').inner_text() == "running"

    reports.locator('input[name="reason"]').fill("nightly import")
    reports.locator('button[value="pause"]').click()
    page.wait_for_selector("text=Queue reports paused")
    page.shots.take("paused")
    assert reports.locator('td[data-field="state"]').inner_text() == "paused"
    assert QueuePause.objects.get(queue_name="reports").reason == "nightly import"
    assert page.inner_text('figure[data-queue="reports"] figcaption') == "reports (paused)"

    queues.pause("emails", reason="paused elsewhere")  # e.g. by skipqueue_pause
    page.reload()
    assert page.inner_text('tr[data-queue="emails"] td[data-field="state"]') == "paused"

    reports.locator('button[value="resume"]').click()
    page.wait_for_selector("text=Queue reports resumed.")
    assert reports.locator('td[data-field="state"]').inner_text() == "running"
    assert list(QueuePause.objects.values_list("queue_name", flat=True)) == ["emails"]


def test_a_failed_job_is_retried_from_the_admin_and_becomes_ready(page):
    failed = make_job(JobStatus.FAILED, queue_name="emails")
    other = make_job(JobStatus.FAILED, queue_name="emails")
    superuser()
    log_in(page, "root")
    page.goto("/admin/django_skipqueue/job/?status__exact=failed")
    page.shots.take("failed-jobs")

    page.check(f'input[name="_selected_action"][value="{failed.pk}"]')
    page.select_option('select[name="action"]', "retry_failed")
    page.click('button[name="index"]')
    page.wait_for_selector("text=1 job retried.")
    page.shots.take("retried")

    failed.refresh_from_db()
    other.refresh_from_db()
    assert (failed.status, other.status) == ("ready", "failed")
    assert failed.max_attempts == failed.attempts + 1

    page.goto(f"/admin/django_skipqueue/job/{failed.pk}/change/")
    assert page.inner_text(".field-status_label .readonly") == "Ready"


def test_a_user_without_the_permission_cannot_retry(page):
    failed = make_job(JobStatus.FAILED)
    # An operator who may cancel jobs, but not retry them.
    staff_user("viewer", "view_job", "cancel_job")
    log_in(page, "viewer")
    page.goto("/admin/django_skipqueue/job/")
    options = page.locator('select[name="action"] option').evaluate_all(
        "options => options.map(o => o.value)"
    )
    assert "retry_failed" not in options and "cancel_waiting" in options
    page.shots.take("no-retry-offered")

    # Forge the action in the page: the server refuses it, whatever the form says.
    page.evaluate(
        """() => { const select = document.querySelector('select[name="action"]');
        select.add(new Option('Retry', 'retry_failed')); select.value = 'retry_failed'; }"""
    )
    page.check(f'input[name="_selected_action"][value="{failed.pk}"]')
    page.click('button[name="index"]')
    page.wait_for_selector("text=No action selected.")
    page.shots.take("forged-retry-refused")
    failed.refresh_from_db()
    assert failed.status == "failed"

    page.goto(f"/admin/django_skipqueue/job/{failed.pk}/change/")
    choices = page.locator('select[name="CHANGE_FORM-action"] option').evaluate_all(
        "options => options.map(o => o.value)"
    )
    assert "retry_failed" not in choices and "cancel_waiting" in choices


INJECTED_ARG = '<img id="injected-arg" src="x" onerror="window.pwned = 1">'
INJECTED_TRACEBACK = '<script>window.pwned = 2</script><b id="injected-tb">bold</b>'


def test_html_in_arguments_and_tracebacks_renders_as_text(page):
    job = make_job(
        JobStatus.FAILED,
        args=[INJECTED_ARG],
        kwargs={"note": "<i id='injected-kwarg'>x</i>"},
        errors=[{"exception_class_path": "app.<u id='injected-path'>E</u>",
                 "traceback": f"Traceback (most recent call last):\n{INJECTED_TRACEBACK}\n"}],
    )  # fmt: skip
    make_job(JobStatus.READY, task_path="<em id='injected-task'>t</em>")
    add_worker(
        "<span id='injected-owner'>w</span>", ["default"], hostname="<b id='injected-host'>"
    )
    superuser()
    log_in(page, "root")

    page.goto(f"/admin/django_skipqueue/job/{job.pk}/change/")
    page.shots.take("job-page")
    for element in ("injected-arg", "injected-kwarg", "injected-tb", "injected-path"):
        assert page.locator(f"#{element}").count() == 0, element
    assert page.evaluate("() => window.pwned") is None
    assert INJECTED_ARG.replace('"', '\\"') in page.inner_text(".field-args_json pre")
    assert INJECTED_TRACEBACK in page.inner_text("pre.skipqueue-traceback")
    assert "app.<u id='injected-path'>E</u>" in page.inner_text(".skipqueue-error-title")

    page.goto("/admin/django_skipqueue/job/")
    assert page.locator("#injected-task").count() == 0
    assert page.locator("#result_list").get_by_text("<em id='injected-task'>t</em>").count() == 1
    page.goto(DASHBOARD)
    assert page.locator("#injected-owner, #injected-host").count() == 0
    workers = page.locator("#skipqueue-workers")
    assert workers.get_by_text("<span id='injected-owner'>w</span>").count() == 1
    page.shots.take("dashboard")
