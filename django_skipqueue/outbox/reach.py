"""Log a broker outage as a relay sees it: a line when it goes, a summary now and then, a line
when it is back.

A relay retries with exponential backoff while its broker is away; a line per retry (with a
traceback, for NATS) filled the logs with thousands of lines an hour.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.utils import timezone

from django_skipqueue.db.outage import SUMMARY_SECONDS

logger = logging.getLogger("django_skipqueue.outbox.relay")


class BrokerReach:
    """Whether the relay's broker answers, and since when it does not."""

    def __init__(self, broker: str) -> None:
        self.broker = broker
        self.down_since: float | None = None
        self.failures = 0
        self.next_summary_at = 0.0

    def failed(self, error: BaseException) -> None:
        """Count a failure; log it when the outage starts, then once a SUMMARY_SECONDS."""
        now = time.monotonic()
        self.failures += 1
        if self.down_since is None:
            self.down_since = now
            self.failures = 1
            logger.warning(
                "broker unreachable, retrying broker=%s error=%s", self.broker, _one_line(error)
            )
        elif now >= self.next_summary_at:
            logger.warning(
                "broker still unreachable broker=%s for_s=%.0f failures=%d error=%s",
                self.broker,
                now - self.down_since,
                self.failures,
                _one_line(error),
            )
        else:
            return
        self.next_summary_at = now + SUMMARY_SECONDS

    def recovered(self) -> None:
        """Log the end of an outage, once; nothing when the broker was not down."""
        if self.down_since is None:
            return
        logger.info(
            "broker reachable again broker=%s after_s=%.1f failures=%d",
            self.broker,
            time.monotonic() - self.down_since,
            self.failures,
        )
        self.down_since = None
        self.failures = 0


def _one_line(error: BaseException) -> str:
    return str(error).replace("\n", " ")


def say_held(using: str, heartbeat: float) -> None:
    """Say once why a --burst relay waits: partitions with work whose lease another holds.

    A relay killed mid-round keeps its leases until they run out (SKIPQUEUE_OUTBOX_LEASE_SECONDS):
    a burst run then waited that long without a word.
    """
    from django_skipqueue.outbox.models import OutboxPartition, OutboxRelay

    now = timezone.now()
    held = list(
        OutboxPartition.objects.using(using)
        .filter(owner__isnull=False, lease_until__gt=now)
        .order_by("number")
        .values_list("number", "owner", "lease_until")
    )
    if not held:
        return
    owners = {str(owner) for _, owner, _ in held}
    live = set(
        OutboxRelay.objects.using(using)
        .filter(name__in=owners, stopped_at__isnull=True)
        .filter(last_heartbeat_at__gte=now - timedelta(seconds=2 * heartbeat))
        .values_list("name", flat=True)
    )
    numbers = ", ".join(str(number) for number, _, _ in held)
    wait = max((until - now).total_seconds() for _, _, until in held if until)
    if owners - live:
        logger.warning(
            "waiting up to %.0f s for the lease of partitions %s held by a relay that stopped "
            "without giving them back relays=%s",
            wait,
            numbers,
            ",".join(sorted(owners - live)),
        )
    else:
        logger.info(
            "waiting up to %.0f s for partitions %s that live relays are publishing relays=%s",
            wait,
            numbers,
            ",".join(sorted(owners)),
        )
