"""The outbox tables: messages waiting for the relay, partition leases, relays, the inbox."""

from __future__ import annotations

import json
from typing import Any

from django.db import models

from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.db.keys import KeyField
from django_skipqueue.models.process import ProcessRecord
from django_skipqueue.outbox.states import MessageStatus

#: Explicit: were the app left out of INSTALLED_APPS, its models would join
#: django_skipqueue (the package around them) and name tables no migration creates.
APP_LABEL = "skipqueue_outbox"


class CompactJSONEncoder(json.JSONEncoder):
    """JSON without spaces: the payload is stored as the text the relay sends as the body."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "separators": (",", ":")})


class OutboxMessage(models.Model):
    """One event written in the business transaction, deleted once the broker confirmed it."""

    # Monotonic: the order of a key's messages is the order of their ids.
    id = models.BigAutoField(primary_key=True)
    # A new row's status is states.PUBLISH's; later, only transitions.py writes it.
    status = models.CharField(
        max_length=8, choices=MessageStatus.choices, default=MessageStatus.PENDING
    )
    # hash(key) modulo SKIPQUEUE_OUTBOX_PARTITIONS: one relay at a time sends a partition.
    partition = models.PositiveSmallIntegerField()
    topic = models.CharField(max_length=255)
    key = KeyField(max_length=255, blank=True, default="")
    message_id = KeyField(max_length=255, unique=True)
    payload = models.JSONField(encoder=CompactJSONEncoder)
    headers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_default=DatabaseNow())
    # Relay bookkeeping: the claim that last published the row, its attempts, the last error.
    owner = models.CharField(max_length=128, null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    available_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_outbox"
        # The relay's only read: one status and partition, in id order (partitions.py).
        indexes = [
            models.Index(fields=["status", "partition", "id"], name="skipqueue_outbox_claim")
        ]
        permissions = [("resend_outboxmessage", "Can send dead letters again")]

    def __str__(self) -> str:
        return f"{self.topic} {self.message_id}"


class OutboxPartition(models.Model):
    """The lease on one partition: its holder is the only relay publishing its messages."""

    number = models.PositiveSmallIntegerField(primary_key=True)
    owner = models.CharField(max_length=128, null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_outbox_partition"

    def __str__(self) -> str:
        return f"partition {self.number}"


class OutboxRelay(ProcessRecord):
    """One row per relay process start: heartbeat, wake-up address and counters.

    hostname, pid, wakeup_address and stopped_at are ProcessRecord's, as the reading of the
    heartbeat (``OutboxRelay.objects.live()``, ``.with_state()``).
    """

    name = models.CharField(max_length=128, unique=True)
    broker = models.CharField(max_length=255)
    # The database's clock when the relay registers (no clock of the relay's host).
    started_at = models.DateTimeField(db_default=DatabaseNow())
    last_heartbeat_at = models.DateTimeField(db_default=DatabaseNow())
    sent = models.PositiveBigIntegerField(default=0)
    retried = models.PositiveBigIntegerField(default=0)
    dead = models.PositiveBigIntegerField(default=0)
    # Broker confirm latency of the last round, in milliseconds.
    confirm_ms = models.FloatField(null=True, blank=True)
    # Messages sent per second between the last two heartbeats.
    publish_rate = models.FloatField(null=True, blank=True)

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_outbox_relay"

    def __str__(self) -> str:
        return self.name


class InboxMessage(models.Model):
    """A message id a consumer processed; the UNIQUE index turns a redelivery away."""

    # Each consumer keeps its own record: two consumers of one message both process it.
    consumer = KeyField(max_length=100, default="", blank=True)
    message_id = KeyField(max_length=255)
    received_at = models.DateTimeField(db_default=DatabaseNow())

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_inbox"
        constraints = [
            models.UniqueConstraint(
                fields=["consumer", "message_id"], name="skipqueue_inbox_received_once"
            )
        ]

    def __str__(self) -> str:
        return self.message_id
