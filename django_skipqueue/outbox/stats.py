"""Outbox figures for skipqueue_status and skipqueue_health: depth, age, dead letters, relays."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.apps import apps
from django.db.models import Avg, Min, Sum

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.db.counting import capped_count
from django_skipqueue.durations import format_seconds

#: The app label; the figures exist only where the outbox app is installed.
APP = "django_skipqueue.outbox"


@dataclass
class OutboxStatus:
    pending: int
    retry: int
    dead: int
    #: Seconds the oldest unsent (pending or retry) message has waited; None: none waits.
    oldest_unsent_age: float | None
    relays_live: int
    relays_stale: int
    #: Messages the live relays have sent since they started.
    sent_by_live_relays: int
    #: Mean confirm latency per message of the live relays' last rounds, in milliseconds.
    confirm_ms: float | None
    #: Messages per second the live relays sent between their last two heartbeats.
    publish_rate: float
    approximate: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        return (
            f"outbox: {self.pending} pending, {self.retry} retrying, {self.dead} dead letters; "
            f"oldest unsent {format_seconds(self.oldest_unsent_age)}; "
            f"relays: {self.relays_live} live, {self.relays_stale} stale; "
            f"publishing {self.publish_rate:.1f} msg/s"
        )


def outbox_status(using: str) -> OutboxStatus | None:
    """Gather the outbox figures, or None when the outbox app is not installed."""
    if not apps.is_installed(APP):
        return None
    from django_skipqueue.outbox.models import OutboxMessage, OutboxRelay
    from django_skipqueue.outbox.states import MessageStatus

    settings = get_settings()
    messages = OutboxMessage.objects.using(using)
    counts = {
        status: capped_count(messages.filter(status=status), settings.STATUS_COUNT_CAP)
        for status in MessageStatus.values
    }
    oldest = oldest_unsent(messages, [MessageStatus.PENDING, MessageStatus.RETRY])
    age = None if oldest is None else max((read_db_now(using) - oldest).total_seconds(), 0.0)
    relays = OutboxRelay.objects.using(using)
    live = relays.live()
    figures = live.aggregate(sent=Sum("sent"), confirm=Avg("confirm_ms"), rate=Sum("publish_rate"))
    return OutboxStatus(
        pending=counts[MessageStatus.PENDING].value,
        retry=counts[MessageStatus.RETRY].value,
        dead=counts[MessageStatus.DEAD].value,
        oldest_unsent_age=age,
        relays_live=live.count(),
        relays_stale=relays.stale().count(),
        sent_by_live_relays=figures["sent"] or 0,
        confirm_ms=figures["confirm"],
        publish_rate=figures["rate"] or 0.0,
        approximate=[status for status, count in counts.items() if count.approximate],
    )


def with_relay_state(relays: Any) -> Any:
    """Annotate each relay row with ``state``: stopped, live, stale or gone (database clock)."""
    return relays.with_state()


def oldest_unsent(messages: Any, statuses: list[str]) -> Any:
    """The ``created_at`` of the lowest id among ``statuses``, or None.

    The first id of each status and partition is one seek on the relay's index (status,
    partition, id), a loose index scan; reading in id order instead would walk every row
    before the first unsent one, dead letters included, on each scrape.
    """
    firsts = (
        messages.filter(status__in=statuses)
        .order_by()
        .values("status", "partition")
        .annotate(first=Min("id"))
        .values_list("first", flat=True)
    )
    first = min(firsts, default=None)
    if first is None:
        return None
    return messages.filter(pk=first).values_list("created_at", flat=True).first()


def lag_problem(status: OutboxStatus | None, limit: float) -> str | None:
    """Return why the outbox is unhealthy (its oldest unsent message is too old), or None."""
    if status is None or status.oldest_unsent_age is None:
        return None
    if status.oldest_unsent_age <= limit:
        return None
    relays = "no live relay" if not status.relays_live else f"{status.relays_live} live relay(s)"
    return (
        f"outbox: the oldest unsent message has waited {format_seconds(status.oldest_unsent_age)} "
        f"(limit {format_seconds(limit)}; {relays})"
    )
