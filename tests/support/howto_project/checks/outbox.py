"""Check docs/howto/outbox.md: one published event per placed order, none for a rollback.

Run by the page's ``run`` directive in ``manage.py shell``, while the page's
``runworkers --queues outbox`` runs in the background; every module it imports from ``orders``
is the page's own (``new project``).
"""

import time

from checks.common import place_orders
from orders import bus
from orders.models import Order

from django_skipqueue.models import Job


def wait_for_jobs(timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while Job.objects.exclude(status__in=["succeeded", "failed", "cancelled"]).exists():
        assert time.monotonic() < deadline, list(Job.objects.values_list("id", "status"))
        time.sleep(0.2)


first, second = place_orders()

wait_for_jobs()
jobs = list(Job.objects.values_list("task_path", "queue_name", "status"))
assert jobs == [("orders.tasks.publish_event", "outbox", "succeeded")] * 2, jobs
assert Order.objects.count() == 2, "the abandoned order was committed"
messages = sorted(bus.published(), key=lambda message: message["id"])
assert [(m["type"], m["id"], m["payload"]) for m in messages] == [
    ("order.placed", f"order.placed:{first.pk}", {"order_id": first.pk, "total": "12.50"}),
    ("order.placed", f"order.placed:{second.pk}", {"order_id": second.pk, "total": "7.00"}),
], messages
