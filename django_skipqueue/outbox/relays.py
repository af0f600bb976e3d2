"""Wake idle relays after a publish() commits: what the datagram says, and to whom it goes.

The mechanism is the core's (:mod:`django_skipqueue.wakeup`: after the commit, best effort, the
addresses of live processes cached a moment); this module adds what is the outbox's own. The
datagram names the partitions that received messages, so the woken relay leases them straight
away instead of first looking for the partitions with work: one statement less between the
commit and the publish. It goes to every relay that answers (``ProcessRecord``'s reading of
the heartbeat).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import partial

from django_skipqueue import wakeup
from django_skipqueue.outbox.models import OutboxRelay

logger = logging.getLogger(__name__)

#: The datagram when no partition is named (the admin's "send again"): look everywhere.
PAYLOAD = b"outbox"

#: Bytes of partition numbers a datagram carries at most (what the relay reads of one).
MAX_PAYLOAD = 500


def after_commit(using: str, partitions: Iterable[int] = ()) -> None:
    """Wake the live relays once the current transaction on ``using`` commits."""
    wakeup.when_committed(using, partial(notify, using, frozenset(partitions)))


def notify(using: str, partitions: frozenset[int] = frozenset()) -> int:
    """Send the datagram to every live relay; never raise (the producer must not fail)."""
    try:
        payload = ",".join(map(str, sorted(partitions))).encode()
        if not payload or len(payload) > MAX_PAYLOAD:
            payload = PAYLOAD
        return wakeup.send(payload, _live_relays(using))
    except Exception:
        logger.debug("relay wake-up not sent", exc_info=True)
        return 0


def named_partitions(payloads: Iterable[str]) -> frozenset[int] | None:
    """The partitions the datagrams named; None when one named none (look everywhere)."""
    numbers: set[int] = set()
    for token in payloads:
        if not token.isdigit():
            return None
        numbers.add(int(token))
    return frozenset(numbers)


def forget_addresses() -> None:
    """Drop the cached relay addresses (the core's cache, every kind: tests)."""
    wakeup.forget_addresses()


def _live_relays(using: str) -> list[wakeup.Address]:
    def load() -> list[wakeup.Address]:
        rows = OutboxRelay.objects.using(using).answering()
        addresses = rows.values_list("wakeup_address", flat=True)
        return [wakeup.parse_address(str(address)) for address in addresses]

    return wakeup.cached(using, "relays", load)
