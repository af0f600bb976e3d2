"""Wake idle relays after a publish() commits: one datagram, best effort, like job wake-ups."""

from __future__ import annotations

import logging
import time
from functools import partial

from django.db import transaction

from ..conf import get_settings
from ..db.clock import DatabaseNowPlus
from ..wakeup import _send, parse_address
from .models import OutboxRelay

logger = logging.getLogger(__name__)

#: Seconds a producer reuses its list of relay addresses.
ADDRESS_CACHE_SECONDS = 2.0
#: The datagram relays hear; its content does not matter.
PAYLOAD = b"outbox"

_addresses: dict[str, tuple[float, list[tuple[str, int]]]] = {}


def after_commit(using: str) -> None:
    """Wake the live relays once the current transaction on ``using`` commits."""
    if get_settings().WAKEUP:
        transaction.on_commit(partial(notify, using), using=using, robust=True)


def notify(using: str) -> int:
    """Send the datagram to every live relay; never raise (the producer must not fail)."""
    try:
        addresses = _live_relays(using)
        for address in addresses:
            _send(PAYLOAD, address)
        return len(addresses)
    except Exception:
        logger.debug("relay wake-up not sent", exc_info=True)
        return 0


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
