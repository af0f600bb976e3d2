"""The outbox in skipqueue_status --json and skipqueue_health."""

from __future__ import annotations

import json
import subprocess

import pytest

from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage, OutboxRelay

pytestmark = pytest.mark.django_db(transaction=True)


def run(manage_py, child_env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*manage_py, *args], env=child_env, capture_output=True, text=True)


def test_status_json_shows_depth_age_dead_letters_and_relays(manage_py, child_env):
    for n in range(3):
        publish("orders", {"n": n}, key="k")
    OutboxMessage.objects.filter(pk=OutboxMessage.objects.order_by("id")[0].pk).update(
        status=MessageStatus.DEAD
    )
    OutboxRelay.objects.create(
        name="relay-1", hostname="h", pid=1, broker="amqp://x", sent=7, publish_rate=12.5
    )
    OutboxRelay.objects.create(
        name="relay-2", hostname="h", pid=2, broker="amqp://x", sent=3, publish_rate=2.5
    )

    done = run(manage_py, child_env, "skipqueue_status", "--json")
    outbox = json.loads(done.stdout)["outbox"]
    assert (outbox["pending"], outbox["retry"], outbox["dead"]) == (2, 0, 1)
    assert outbox["oldest_unsent_age"] is not None and 0 <= outbox["oldest_unsent_age"] < 60
    assert (outbox["relays_live"], outbox["sent_by_live_relays"]) == (2, 10)
    assert outbox["publish_rate"] == 15.0

    text = run(manage_py, child_env, "skipqueue_status").stdout
    assert "outbox: 2 pending, 0 retrying, 1 dead letters" in text
    assert "publishing 15.0 msg/s" in text


def test_health_fails_with_status_6_when_an_unsent_message_is_too_old(manage_py, child_env):
    publish("orders", {"n": 1}, key="k")
    OutboxMessage.objects.update(created_at="2000-01-01T00:00:00Z")
    done = run(manage_py, child_env, "skipqueue_health", "--json", "--max-outbox-age", "60")
    verdict = json.loads(done.stdout)
    outbox = [p for p in verdict["problems"] if p["check"] == "OUTBOX_TOO_OLD"]
    assert outbox and outbox[0]["status"] == 6
    assert "no live relay" in outbox[0]["reason"]

    OutboxMessage.objects.all().delete()
    done = run(manage_py, child_env, "skipqueue_health", "--json", "--max-outbox-age", "60")
    assert not [p for p in json.loads(done.stdout)["problems"] if p["check"] == "OUTBOX_TOO_OLD"]
