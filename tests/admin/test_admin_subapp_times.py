"""The optional apps' pages show times as the job pages do: UTC, to the second, ISO order."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from django_skipqueue import reservations
from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import OutboxMessage, OutboxRelay

pytestmark = pytest.mark.django_db

#: Django's localized format ("Dec. 7, 2026, 5:22 p.m."), which the job pages do not use.
LOCALIZED = re.compile(r"\b[A-Z][a-z]{2}\.? \d{1,2}, \d{4}")
MOMENT = datetime(2026, 12, 7, 17, 22, 5, tzinfo=UTC)


def test_each_row_page_shows_its_times_in_utc_to_the_second(admin_client):
    message = publish("orders", {"n": 1})
    OutboxMessage.objects.filter(pk=message.pk).update(created_at=MOMENT, available_at=MOMENT)
    relay = OutboxRelay.objects.create(name="r", hostname="h", pid=1, broker="amqp://x")
    OutboxRelay.objects.filter(pk=relay.pk).update(started_at=MOMENT, last_heartbeat_at=MOMENT)
    reservations.restock(1, 1, 1)
    hold = reservations.reserve(1, 1, 1, holder="c", ttl=60)
    pages = {
        "skipqueue_outbox_outboxmessage": message.pk,
        "skipqueue_outbox_outboxrelay": relay.pk,
        "skipqueue_reservations_reservation": hold.pk,
    }
    for name, pk in pages.items():
        page = admin_client.get(reverse(f"admin:{name}_change", args=[pk])).content.decode()
        assert not LOCALIZED.search(page), (name, LOCALIZED.search(page))
        assert re.search(r"\d{4}-\d\d-\d\d</span> <span>\d\d:\d\d:\d\d", page), name
    outbox = admin_client.get(reverse("admin:skipqueue_outbox_outboxmessage_change",
                                      args=[message.pk])).content.decode()  # fmt: skip
    assert "2026-12-07</span> <span>17:22:05" in outbox and "Created at (UTC)" in outbox
