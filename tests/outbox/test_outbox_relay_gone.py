"""A killed relay is stale for a while, then gone: out of the counts, its row kept in the list."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from django_skipqueue.outbox.models import OutboxRelay

pytestmark = pytest.mark.django_db

RELAYS = "admin:skipqueue_outbox_outboxrelay_changelist"


def relay(name: str, silent: timedelta, **fields: object) -> None:
    row = OutboxRelay.objects.create(name=name, hostname="h", pid=1, broker="amqp://x", **fields)
    OutboxRelay.objects.filter(pk=row.pk).update(last_heartbeat_at=timezone.now() - silent)


def test_a_relay_silent_for_long_is_gone_from_the_counts_and_says_so_in_the_list(admin_client):
    relay("relay-live", timedelta(seconds=1))
    relay("relay-stale", timedelta(minutes=3))
    relay("relay-killed", timedelta(days=2))
    relay("relay-stopped", timedelta(days=3), stopped_at=timezone.now() - timedelta(days=3))
    out = StringIO()
    call_command("skipqueue_status", "--json", stdout=out)
    outbox = json.loads(out.getvalue())["outbox"]
    assert (outbox["relays_live"], outbox["relays_stale"]) == (1, 1)

    page = admin_client.get(reverse(RELAYS)).content.decode()
    for name, state in [("live", "live"), ("stale", "stale"), ("killed", "gone"),
                        ("stopped", "stopped")]:  # fmt: skip
        note = f'<span class="skipqueue-status-note"><span class="skipqueue-relay-{state}">'
        assert f"relay-{name}</span>{note}{state}</span>" in page, name
    assert OutboxRelay.objects.count() == 4
