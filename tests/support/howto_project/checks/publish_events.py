"""Check docs/howto/publish-events.md: one invoice per placed order, none for a rollback, and a
redelivered event skipped by the inbox.

Run by the page's ``run`` directive in ``manage.py shell``, while the page's ``skipqueue_relay``
runs in the background, against the test's own RabbitMQ vhost; ``orders`` is the page's own app.
"""

import json
import time
from decimal import Decimal

import pika
from checks.common import place_orders
from django.conf import settings
from django.core.management import call_command
from orders.models import Invoice

from django_skipqueue.outbox.models import InboxMessage, OutboxMessage


def wait_for_an_empty_outbox(timeout: float = 20) -> float:
    started = time.monotonic()
    while OutboxMessage.objects.exists():
        assert time.monotonic() - started < timeout, list(OutboxMessage.objects.values())
        time.sleep(0.05)
    return time.monotonic() - started


# The page ran its consumer before the relay, which bound the billing queue: an event published
# before that would be an unroutable dead letter, left in the table.
first, second = place_orders()  # a retried request finds the order and publishes nothing

# The idle relay hears the commit: well within its one-second poll.
waited = wait_for_an_empty_outbox()
call_command("consume_orders", until_idle=True)
invoices = sorted(Invoice.objects.values_list("order_id", "total"))
assert invoices == [(first.pk, Decimal("12.50")), (second.pk, Decimal("7.00"))], invoices

# RabbitMQ delivers the first event again (say a relay died before deleting its row).
connection = pika.BlockingConnection(pika.URLParameters(settings.SKIPQUEUE_OUTBOX_BROKER_URL))
body = json.dumps({"order_id": first.pk, "total": "12.50"})
properties = pika.BasicProperties(message_id=f"order-placed-{first.pk}")
connection.channel().basic_publish("orders", f"order-{first.pk}", body, properties)
connection.close()
call_command("consume_orders", until_idle=True)
assert Invoice.objects.count() == 2, "the inbox skipped the redelivery"
assert InboxMessage.objects.filter(consumer="billing").count() == 2
print(f"published after {waited:.2f} s; 2 invoices; the redelivery was skipped")
