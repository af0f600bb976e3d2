"""The optional apps' admin lists in Chromium: each fits a 1400 px window and shows its columns.

Same browser and live server as tests/admin/test_admin_browser.py (its fixtures are reused).
The rows hold values as long as real ones (task paths, broker URLs, uuids, errors), since a
short value hides what a long one does to the table.
"""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from django_skipqueue import reservations
from django_skipqueue.models import JobStatus
from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage, OutboxRelay
from django_skipqueue.scheduling.models import Schedule, Tick
from django_skipqueue.workflows import batch, chain, step
from django_skipqueue.workflows.models import Batch
from tests.admin.test_admin_browser import browser, log_in, page, superuser
from tests.support.admin import make_job
from tests.workflows.tasks import broken, callback, part

__all__ = ["browser", "page"]  # fixtures, imported to be found by pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TASK = "shop.notifications.tasks.send_monthly_statement_with_attachments"
ERROR = (
    "unroutable: no queue bound to exchange 'orders.events' with routing key "
    "'orders.customer.0000000123.invoice_paid' (mandatory publish returned by the broker)"
)

#: Each list and the column headers it must show inside the window.
LISTS = {
    "skipqueue_outbox/outboxmessage": ["Last error", "Attempts", "Status"],
    "skipqueue_outbox/outboxrelay": ["Sent", "Retried", "Dead", "Last heartbeat"],
    "skipqueue_reservations/pool": ["Free", "Held", "Oldest hold"],
    "skipqueue_reservations/reservation": ["Expires", "State", "Holder"],
    "skipqueue_reservations/ledgerentry": ["Delta", "Reason", "Created"],
    "skipqueue_scheduling/schedule": ["Next tick", "Last tick", "Last job", "Missed ticks"],
    "skipqueue_scheduling/tick": ["Tick at", "Job", "Scheduler"],
    "skipqueue_workflows/batch": ["Progress", "Finished"],
}

#: The page's width against the window's, the table's against its box, each header's right
#: edge against the box's (a header scrolled out of it is not shown, whatever its CSS), and the
#: parts of task paths (between <wbr>s) that wrap inside a name ("DoesNotExi st").
SIZES_JS = """() => ({
    page: document.documentElement.scrollWidth, window: window.innerWidth,
    results: document.querySelector('.results').scrollWidth,
    shown: document.querySelector('.results').clientWidth,
    edge: Math.min(window.innerWidth,
        document.querySelector('.results').getBoundingClientRect().right),
    headers: Object.fromEntries([...document.querySelectorAll('#result_list thead th')].map(
        th => [th.innerText.trim(), th.getBoundingClientRect().right])),
    cut: [...document.querySelectorAll('#result_list td.field-task')].flatMap(
        td => [...td.childNodes].filter(node => node.nodeType === 3 && node.data.trim()).filter(
            node => { const r = document.createRange(); r.selectNodeContents(node);
                      return r.getClientRects().length > 1; }).map(node => node.data)),
})"""


def fill() -> None:
    """A few rows of every optional app, with long real-looking values."""
    for n in range(3):
        publish("orders", {"n": n}, key=f"customer-{n:010d}")
    dead = publish("orders", {"n": 9}, key="customer-0000000123")
    OutboxMessage.objects.filter(pk=dead.pk).update(
        status=MessageStatus.DEAD, attempts=10, last_error=ERROR
    )
    OutboxRelay.objects.create(
        name="relay-worker-7f3a9c2e.eu-west-1.compute.internal-48213-1733592000",
        hostname="worker-7f3a9c2e.eu-west-1.compute.internal",
        pid=48213,
        broker="amqp://orders:***@rabbitmq-primary.eu-west-1.internal:5672/%2Fshop",
        sent=1_234_567,
        retried=4_321,
        dead=17,
        confirm_ms=1.25,
    )
    reservations.restock(1_000_031, 17, 6, reference="delivery note 2026-12-07/000123")
    reservations.reserve(
        1_000_031, 17, 2, holder="cart-7f3a9c2e-4b1d-4e8a-9f00-123456789abc", ttl=600,
        reference="order 2026-12-07 #123456",
    )  # fmt: skip
    now = timezone.now()
    job = make_job(JobStatus.SUCCEEDED, task_path=TASK)
    schedule = Schedule.objects.create(
        name="monthly-statements-for-every-customer", task_path=TASK, cron="*/5 * * * *",
        time_zone="America/Argentina/Buenos_Aires", next_tick_at=now + timedelta(minutes=5),
        last_tick_at=now, last_job_id=job.pk, missed_ticks=12,
    )  # fmt: skip
    Tick.objects.create(
        schedule=schedule, tick_at=now, job_id=job.pk, enqueued_at=now,
        scheduler="scheduler-worker-7f3a9c2e.eu-west-1.compute.internal-48213",
    )  # fmt: skip
    Batch.objects.create(
        description="thumbnails of album 7 for the customer's shared gallery", size=5,
        succeeded=4, failed=1, created_at=now, finished_at=now, on_success=TASK, on_failure=TASK,
    )  # fmt: skip


def test_each_optional_app_list_fits_a_1400_pixel_window_with_its_columns_shown(page):
    fill()
    superuser()
    log_in(page, "root")
    page.emulate_media(color_scheme="light")
    assert page.viewport_size["width"] == 1400
    problems = []
    for path, wanted in LISTS.items():
        page.goto(f"/admin/{path}/")
        page.shots.take(path.replace("/", "-"))
        assert page.locator("#result_list tbody tr").count() >= 1, path
        problems += misfits(path, wanted, page.evaluate(SIZES_JS))
    assert not problems, "\n".join(problems)


def misfits(path: str, wanted: list[str], sizes: dict) -> list[str]:
    """What of one list does not fit the window or is not shown."""
    problems = []
    if sizes["page"] > sizes["window"] or sizes["results"] > sizes["shown"]:
        problems.append(f"{path}: overflows: {sizes}")
    if sizes["cut"]:
        problems.append(f"{path}: task path names cut mid-word: {sizes['cut']}")
    # Headers may say their unit after the name: "Expires (UTC)".
    headers = {name.lower(): right for name, right in sizes["headers"].items()}
    for name in wanted:
        found = [right for header, right in headers.items() if header.startswith(name.lower())]
        if not found or not 0 < found[0] <= sizes["edge"]:
            problems.append(f"{path}: {name!r} not shown ({found}) among {list(headers)}")
    return problems


def test_a_failed_batch_reads_as_failed_and_links_to_its_failed_member(page, manage_py, child_env):
    with batch(on_success=callback, on_failure=callback, description="five parts") as opened:
        for n in range(4):
            part.enqueue(n)
        failing = broken.enqueue(4)
    steps = chain(step(part, 1), step(part), step(part), description="three doublings")
    burst = [*manage_py, "runworkers", "--burst", "--processes", "1"]
    subprocess.run(burst, env=child_env, check=True, timeout=120, capture_output=True)
    row = Batch.objects.get(pk=opened.id)
    assert (row.succeeded, row.failed, row.is_finished) == (4, 1, True)
    superuser()
    log_in(page, "root")

    page.goto(f"/admin/skipqueue_workflows/batch/{opened.id}/change/")
    page.shots.take("failed-batch")
    progress = page.inner_text(".field-progress .readonly")
    assert "5 / 5 (failed)" in progress and "4 succeeded, 1 failed, 0 cancelled" in progress
    assert page.locator(".field-progress .skipqueue-bar-failed").count() == 1
    callbacks = page.inner_text(".field-callbacks .readonly")
    assert "on_success: tests.workflows.tasks.callback -> will not run (a member failed)" in (
        callbacks
    )
    first = page.locator(".skipqueue-members tbody tr").first
    assert first.locator("td[data-status]").get_attribute("data-job") == str(failing.id)
    assert "ValueError" in first.inner_text()
    first.locator("a").first.click()
    page.wait_for_url(f"**/django_skipqueue/job/{failing.id}/change/")
    assert "part 4 is broken" in page.inner_text(".field-errors_list")

    page.goto(f"/admin/skipqueue_workflows/batch/{steps.pk}/change/")
    page.shots.take("chain")
    cells = page.locator(".skipqueue-steps tbody tr").evaluate_all(
        "rows => rows.map(row => [...row.cells].map(cell => cell.innerText.trim()))"
    )
    assert [(row[0], row[3]) for row in cells] == [("1", "2"), ("2", "4"), ("3", "8")], cells
