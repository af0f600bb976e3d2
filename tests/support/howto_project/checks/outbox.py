"""Check docs/howto/outbox.md: one published event per placed order, none for a rollback.

Run by the page's ``run`` directive in ``manage.py shell``, while the page's
``runworkers --queues outbox`` runs in the background.
"""

import os
import time
from decimal import Decimal

from django.db import transaction
from orders import bus
from orders.models import Cart, Order
from orders.services import place_order

from django_skipqueue.models import Job


class Abandoned(Exception):
    """Raised after place_order, inside the caller's transaction, to roll it all back."""


def wait_for_jobs(timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while Job.objects.exclude(status__in=["succeeded", "failed", "cancelled"]).exists():
        assert time.monotonic() < deadline, list(Job.objects.values_list("id", "status"))
        time.sleep(0.2)


ada = Cart.objects.create(customer="ada", total=Decimal("12.50"))
grace = Cart.objects.create(customer="grace", total=Decimal("7.00"))
first = place_order(ada)
assert place_order(ada) == first, "a retried request must find the same order"
second = place_order(grace)
try:
    with transaction.atomic():
        place_order(Cart.objects.create(customer="linus", total=Decimal("3.00")))
        raise Abandoned
except Abandoned:
    pass

wait_for_jobs()
jobs = list(Job.objects.values_list("task_path", "queue_name", "status"))
assert jobs == [("orders.tasks.publish_event", "outbox", "succeeded")] * 2, jobs
assert Order.objects.count() == 2, "the abandoned order was committed"
messages = sorted(bus.published(), key=lambda message: message["id"])
assert [(m["type"], m["id"], m["payload"]) for m in messages] == [
    ("order.placed", f"order.placed:{first.pk}", {"order_id": first.pk, "total": "12.50"}),
    ("order.placed", f"order.placed:{second.pk}", {"order_id": second.pk, "total": "7.00"}),
], messages
assert os.getpid() not in {m["pid"] for m in messages}, "published by this process, not a worker"
