"""Check docs/howto/publish-events.md's NATS step: the stream the page's script created holds each
placed order's event under its subject, with its message id, and the outbox is empty.

Run by the page's ``run`` directive in ``manage.py shell``, while the page's ``skipqueue_relay``
publishes to the shared NATS server. The test gives the page a stream name and a subject prefix
of its own (its ``SKQ_HOWTO_NATS_*`` environment variables), so nothing lands in another stream.
"""

import asyncio
import json
import os
import time

import nats
from checks.common import place_orders

from django_skipqueue.outbox.models import OutboxMessage

STREAM = os.environ["SKQ_HOWTO_NATS_STREAM"]
PREFIX = os.environ["SKQ_HOWTO_NATS_PREFIX"]


async def stored() -> list[tuple[str, str, dict]]:
    """Return (subject, Nats-Msg-Id, payload) of every message of the test's stream."""
    connection = await nats.connect("nats://127.0.0.1:4222")
    try:
        stream = connection.jetstream()
        state = (await stream.stream_info(STREAM)).state
        messages = [await stream.get_msg(STREAM, seq) for seq in range(1, state.last_seq + 1)]
    finally:
        await connection.close()
    return [(m.subject, (m.headers or {})["Nats-Msg-Id"], json.loads(m.data)) for m in messages]


first, second = place_orders()
deadline = time.monotonic() + 30
while OutboxMessage.objects.exists():
    assert time.monotonic() < deadline, list(OutboxMessage.objects.values())
    time.sleep(0.05)
expected = [
    (f"{PREFIX}.order-{order.pk}", f"order-placed-{order.pk}",
     {"order_id": order.pk, "total": str(order.total)})
    for order in (first, second)
]  # fmt: skip
assert sorted(asyncio.run(stored())) == sorted(expected), asyncio.run(stored())
print(f"2 events in stream {STREAM}")
