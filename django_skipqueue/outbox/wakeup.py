"""Wake idle relays after a publish() commits: one datagram, best effort, like job wake-ups.

The datagram names the partitions that received messages, so the woken relay leases them
straight away instead of first looking for the partitions with work: one statement less
between the commit and the publish.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from functools import partial

from django.db import transaction

from ..conf import get_settings
from ..db.clock import DatabaseNowPlus
from ..wakeup import _send, parse_address
from .models import OutboxRelay

logger = logging.getLogger(__name__)

#: Seconds a producer reuses its list of relay addresses.
ADDRESS_CACHE_SECONDS = 2.0
#: The datagram when no partition is named (the admin's "send again"): look everywhere.
PAYLOAD = b"outbox"

#: Bytes of partition numbers a datagram carries at most (what the relay reads of one).
MAX_PAYLOAD = 500

_addresses: dict[str, tuple[float, list[tuple[str, int]]]] = {}


def after_commit(using: str, partitions: Iterable[int] = ()) -> None:
    """Wake the live relays once the current transaction on ``using`` commits."""
    if get_settings().WAKEUP:
        named = frozenset(partitions)
        transaction.on_commit(partial(notify, using, named), using=using, robust=True)


def notify(using: str, partitions: frozenset[int] = frozenset()) -> int:
    """Send the datagram to every live relay; never raise (the producer must not fail)."""
    try:
        addresses = _live_relays(using)
        payload = ",".join(map(str, sorted(partitions))).encode()
        if not payload or len(payload) > MAX_PAYLOAD:
            payload = PAYLOAD
        for address in addresses:
            _send(payload, address)
        return len(addresses)
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
    _addresses.clear()


def _live_relays(using: str) -> list[tuple[str, int]]:
    now = time.monotonic()
    cached = _addresses.get(using)
    if cached is not None and cached[0] > now:
        return cached[1]
    horizon = -3 * get_settings().HEARTBEAT_SECONDS
    rows = OutboxRelay.objects.using(using).filter(
        stopped_at__isnull=True,
        wakeup_address__isnull=False,
        last_heartbeat_at__gte=DatabaseNowPlus(horizon),
    )
    addresses = [parse_address(str(a)) for a in rows.values_list("wakeup_address", flat=True)]
    _addresses[using] = (now + ADDRESS_CACHE_SECONDS, addresses)
    return addresses
