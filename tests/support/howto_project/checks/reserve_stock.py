"""Check docs/howto/reserve-stock.md: ten carts race for five mugs, sales commit with payments,
an expired hold goes back through the sweep command and cannot be paid, and the ledger agrees.

Run by the page's ``run`` directive in ``manage.py shell``.
"""

import subprocess
import sys
import threading

from django.db import connections
from django.db.models import Sum
from django.test import RequestFactory
from shop.checkout import abandon, hold_cart, pay
from shop.models import Payment
from shop.stock import receive, top_up

from django_skipqueue import reservations
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.exceptions import HoldExpired, InsufficientStock
from django_skipqueue.reservations.models import LedgerEntry, Reservation

MUG, TEAPOT = 42, 43
assert receive(MUG, 1, 5, "delivery 1") == 5
assert receive(TEAPOT, 1, 1, "delivery 1") == 1

carts: dict[str, list[int]] = {}
refused: list[str] = []


def checkout(cart: str) -> None:
    try:
        carts[cart] = hold_cart(cart, {MUG: 1})
    except InsufficientStock:
        refused.append(cart)
    finally:
        connections.close_all()


buyers = [threading.Thread(target=checkout, args=(f"cart-{n}",)) for n in range(10)]
for buyer in buyers:
    buyer.start()
for buyer in buyers:
    buyer.join(60)
assert (len(carts), len(refused)) == (5, 5), (carts, refused)
assert reservations.available(MUG, 1) == 0

# A cart of two lines is held whole or not at all.
try:
    hold_cart("cart-x", {TEAPOT: 1, MUG: 1})
except InsufficientStock:
    pass
else:
    raise AssertionError("the mug line should have failed")
assert reservations.available(TEAPOT, 1) == 1, "the teapot line was rolled back with it"

paid, late, dropped = list(carts.values())[:3], list(carts.values())[3], list(carts.values())[4]
for holds in paid:
    payment = Payment.objects.create()
    pay(payment, holds)
    payment.refresh_from_db()
    assert payment.status == "confirmed"
abandon(dropped)

Reservation.objects.filter(pk__in=late).update(expires_at=DatabaseNowPlus(-1))  # runs out
swept = subprocess.run([sys.executable, "manage.py", "skipqueue_release_expired"],
                       capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
assert swept.stdout.strip() == "released=1", swept.stdout + swept.stderr
payment = Payment.objects.create()
try:
    pay(payment, late)
except HoldExpired:
    pass
else:
    raise AssertionError("an expired hold was confirmed")
payment.refresh_from_db()
assert payment.status == "pending", "the payment rolled back with the refused sale"

assert reservations.available(MUG, 1) == 2, "one released, one expired, three sold"
free_by_ledger = LedgerEntry.objects.filter(item_id=MUG).aggregate(total=Sum("delta"))["total"]
assert free_by_ledger == 2
reasons = sorted(LedgerEntry.objects.filter(item_id=MUG).values_list("reason", flat=True))
assert reasons == ["expiry", "hold", "hold", "hold", "hold", "hold", "release", "restock",
                   "sale", "sale", "sale"], reasons  # fmt: skip

assert top_up(MUG, 1, on_hand=5000) == 900, "the pool holds 2; up to the cap of 1,000 in 100s"
assert reservations.available(MUG, 1) == 902

from shop.views import stock_level  # noqa: E402  (the page's view, written above)

response = stock_level(RequestFactory().get(f"/stock/{MUG}"), MUG)
assert response.content == b'{"item": 42, "available": 902}', response.content
