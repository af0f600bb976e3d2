"""The outbox section of the dashboard in a real browser, and a dead letter sent again from it.

Same set-up as tests/admin/test_admin_browser.py: Debian's Chromium driven by Playwright
against a live server, screenshots in test-artifacts/admin/.
"""

from __future__ import annotations

import re

import pytest

from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage, OutboxRelay
from tests.admin.test_admin_browser import DASHBOARD, browser, log_in, page, superuser

pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

__all__ = ["browser", "page"]  # fixtures


def fill_outbox() -> OutboxMessage:
    for n in range(3):
        publish("orders", {"n": n}, key=f"k{n}")
    retrying = publish("orders", {"n": 3}, key="k3")
    OutboxMessage.objects.filter(pk=retrying.pk).update(status=MessageStatus.RETRY)
    dead = publish("orders", {"n": 4}, key="k4", message_id="dead-4")
    OutboxMessage.objects.filter(pk=dead.pk).update(
        status=MessageStatus.DEAD, attempts=10, last_error="unroutable: no queue bound"
    )
    OutboxMessage.objects.update(created_at="2020-01-01T00:00:00Z")
    OutboxRelay.objects.create(
        name="relay-live",
        hostname="h",
        pid=1,
        broker="amqp://x",
        sent=900,
        publish_rate=42.5,
        confirm_ms=1.25,
    )
    return dead


def test_the_dashboard_shows_the_outbox_and_a_dead_letter_is_sent_again(page):
    dead = fill_outbox()
    superuser()

    log_in(page, "root")
    page.goto(DASHBOARD)
    section = page.locator("#skipqueue-outbox")
    section.wait_for()
    page.shots.take("dashboard-outbox")
    figures = {
        field: section.locator(f'td[data-field="{field}"]').inner_text()
        for field in ("pending", "retry", "dead", "publish-rate", "confirm", "sent")
    }
    assert figures == {
        "pending": "3",
        "retry": "1",
        "dead": "1",
        "publish-rate": "42.5",
        "confirm": "1.25 ms",
        "sent": "900",
    }
    assert "1 live relay" in section.locator("h2").inner_text()
    oldest = section.locator('td[data-field="oldest-unsent"]').inner_text()
    assert re.fullmatch(r"\d+d\d\dh", oldest), oldest  # written in 2020

    section.locator('td[data-field="dead"] a').click()
    page.wait_for_selector("#result_list")
    page.shots.take("dead-letters")
    assert page.locator("#result_list tbody tr").count() == 1
    page.check(f'input[name="_selected_action"][value="{dead.pk}"]')
    page.select_option('select[name="action"]', "send_again")
    page.click('button[name="index"]')
    page.wait_for_selector("ul.messagelist")
    page.shots.take("sent-again")
    assert "1 dead letter(s) will be sent again" in page.inner_text("ul.messagelist")
    dead.refresh_from_db()
    assert (dead.status, dead.attempts) == (MessageStatus.PENDING, 0)

    page.goto(DASHBOARD)
    assert page.locator('#skipqueue-outbox td[data-field="dead"]').inner_text() == "0"
    assert page.locator('#skipqueue-outbox td[data-field="pending"]').inner_text() == "4"
