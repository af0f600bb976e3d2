"""The reservations admin with Django's test client: figures per pool, release and restock."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from django.urls import reverse

from django_skipqueue import reservations
from django_skipqueue.reservations.models import HoldState, LedgerEntry, Pool, Reservation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.vendor_neutral]

APP = "skipqueue_reservations"
POOLS = reverse("admin:skipqueue_reservations_pool_changelist")
HOLDS = reverse("admin:skipqueue_reservations_reservation_changelist")
LEDGER = reverse("admin:skipqueue_reservations_ledgerentry_changelist")


def user(name: str, *codenames: str) -> User:
    account = User.objects.create_user(name, password="pw", is_staff=True)
    for codename in codenames:
        account.user_permissions.add(
            Permission.objects.get(codename=codename, content_type__app_label=APP)
        )
    return account


@pytest.fixture
def shop():
    """Pool 7/1: 10 units, 3 sold, 2 held (one of them expiring soon); pool 8/1: 4 free."""
    reservations.restock(7, 1, 10)
    reservations.restock(8, 1, 4)
    reservations.confirm(reservations.reserve(7, 1, 3, holder="cart-a", ttl=600))
    old = reservations.reserve(7, 1, 1, holder="cart-b", ttl=3600, reference="order-17")
    reservations.reserve(7, 1, 1, holder="cart-c", ttl=60)
    return old


def cells(html: str, row_of: str) -> list[str]:
    """The text of each cell of the row whose first cell is ``row_of``."""
    for row in re.findall(r"<tr.*?</tr>", html, re.S):
        texts = [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        ]
        if row_of in texts[:2]:
            return texts
    raise AssertionError(f"no row {row_of!r}")


def test_each_pool_shows_its_stock_free_held_sold_oldest_and_expiring_holds(client, shop):
    client.force_login(user("viewer", "view_pool"))
    page = client.get(POOLS).content.decode()
    row = cells(page, "7")
    # item, location, stock, free, held, sold, oldest hold, expiring within 5 min, ledger
    assert row[:6] == ["7", "1", "10", "5", "2", "3"], row
    assert row[6].startswith(f"#{shop.pk},"), "the oldest hold is the smaller id"
    assert row[7] == "1", "one unit expires within five minutes"
    assert cells(page, "8")[:6] == ["8", "1", "4", "4", "0", "0"]
    assert "Restock selected pools" not in page, "no action without the permission"


def test_the_ledger_of_one_pool_is_one_click_away(client, shop):
    client.force_login(user("viewer", "view_pool", "view_ledgerentry"))
    page = client.get(f"{LEDGER}?item_id=8&location_id=1").content.decode()
    assert page.count("restock") >= 1 and "cart" not in page
    results = page.split('id="result_list"')[1].split("</table>")[0]
    assert results.count("<tr") == 2, "a header and pool 8's one entry"


def test_restock_asks_for_a_quantity_and_keeps_the_cap(client, shop):
    client.force_login(user("stocker", "view_pool", "restock_pool"))
    pool_ids = [str(Pool.objects.get(item_id=item).pk) for item in (7, 8)]
    form = client.post(POOLS, {"action": "restock", "_selected_action": pool_ids})
    assert b'name="quantity"' in form.content
    with override_settings(SKIPQUEUE_RESERVATION_POOL_CAP=10):
        done = client.post(POOLS, {"action": "restock", "_selected_action": pool_ids,
                                   "apply": "1", "quantity": "4", "reference": "delivery 9"},
                           follow=True)  # fmt: skip
    text = done.content.decode()
    assert "Item 8 at location 1: restocked, 8 units in the pool." in text
    assert "would pass its cap of 10" in text, "pool 7 holds 7 units: 4 more is too many"
    assert reservations.available(8, 1) == 8 and reservations.available(7, 1) == 5
    assert LedgerEntry.objects.filter(reason="restock", reference="delivery 9").count() == 1


def test_restock_is_refused_without_the_permission(client, shop):
    client.force_login(user("viewer", "view_pool"))
    pool = Pool.objects.get(item_id=8)
    client.post(POOLS, {"action": "restock", "_selected_action": [pool.pk], "apply": "1",
                        "quantity": "4"})  # fmt: skip
    assert reservations.available(8, 1) == 4


def test_release_gives_held_units_back_and_leaves_other_states_alone(client, shop):
    client.force_login(user("support", "view_reservation", "release_reservation"))
    page = client.get(f"{HOLDS}?expiring=soon").content.decode()
    assert "cart-c" in page and "cart-b" not in page, "only the hold expiring within 5 min"
    ids = list(Reservation.objects.values_list("pk", flat=True))
    done = client.post(HOLDS, {"action": "release", "_selected_action": ids}, follow=True)
    text = done.content.decode()
    assert "2 hold(s) released." in text
    assert "1 reservation(s) left alone" in text, "the confirmed one"
    states = sorted(Reservation.objects.values_list("state", flat=True))
    assert states == [HoldState.CONFIRMED, HoldState.RELEASED, HoldState.RELEASED]
    assert reservations.available(7, 1) == 7


def test_release_is_refused_without_the_permission(client, shop):
    client.force_login(user("viewer", "view_reservation"))
    page = client.get(HOLDS).content.decode()
    assert "Release selected holds" not in page
    client.post(HOLDS, {"action": "release", "_selected_action": [shop.pk]})
    assert Reservation.objects.get(pk=shop.pk).state == HoldState.HELD


def test_nothing_is_added_or_edited_by_hand(client, shop):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.get(reverse("admin:skipqueue_reservations_pool_add")).status_code == 403
    change = reverse("admin:skipqueue_reservations_reservation_change", args=[shop.pk])
    page = client.get(change).content.decode()
    assert "order-17" in page and 'name="_save"' not in page
