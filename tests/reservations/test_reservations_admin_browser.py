"""The reservations admin in Chromium: a pool's figures, restocking it, releasing a hold.

Uses the browser and page fixtures of the queue's own admin browser tests (/usr/bin/chromium
driven by Playwright against a live server; screenshots in test-artifacts/admin/).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from django_skipqueue import reservations
from django_skipqueue.reservations.models import HoldState, Reservation

playwright = pytest.importorskip("playwright.sync_api")

from tests.admin.test_admin_browser import browser, log_in, page  # noqa: E402, F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

POOLS = "/admin/skipqueue_reservations/pool/"
HOLDS = "/admin/skipqueue_reservations/reservation/"


def row_texts(tab, first_cell: str) -> list[str]:
    """The cells of the result row whose first text cell is ``first_cell``."""
    for row in tab.locator("#result_list tbody tr").all():
        cells = [cell.strip() for cell in row.locator("td, th").all_inner_texts()]
        cells = cells[1:] if cells and not cells[0] else cells  # the action checkbox
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r}")


def test_restock_a_pool_and_release_a_hold_in_the_browser(page):  # noqa: F811
    reservations.restock(31, 1, 6)
    hold = reservations.reserve(31, 1, 2, holder="cart-9", ttl=600)
    User.objects.create_superuser("boss", password="pw")
    log_in(page, "boss")

    page.goto(POOLS)
    page.shots.take("pools")
    assert row_texts(page, "31")[:6] == ["31", "1", "6", "4", "2", "0"]
    page.locator("#result_list tbody input[type=checkbox]").first.check()
    page.select_option("select[name=action]", "restock")
    page.click("button[name=index]")
    page.fill("#id_quantity", "3")
    page.fill("#id_reference", "delivery 12")
    page.shots.take("restock-form")
    page.click("input[type=submit][value=Restock]")
    page.wait_for_selector(".messagelist")
    page.shots.take("restocked")
    assert "Item 31 at location 1: restocked, 9 units in the pool." in page.inner_text(
        ".messagelist"
    )
    assert row_texts(page, "31")[:6] == ["31", "1", "9", "7", "2", "0"]

    page.goto(HOLDS)
    page.locator("#result_list tbody input[type=checkbox]").first.check()
    page.select_option("select[name=action]", "release")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist")
    page.shots.take("released")
    assert "1 hold(s) released." in page.inner_text(".messagelist")
    assert Reservation.objects.get(pk=hold.pk).state == HoldState.RELEASED
    assert reservations.available(31, 1) == 9
