"""A claim that came up short: is the stock gone, or only locked by another checkout for now?

``SKIP LOCKED`` skips a free unit that another transaction has locked: a reserve that will
take it, or one that will roll back (a ``reserve(4)`` of a 3-unit pool locks all three before it
finds too few). Read at once, "fewer than asked" is a moment, not a fact. A plain read tells
them apart: at READ COMMITTED it takes no lock, waits for none and sees the last committed
state, where a unit that is locked but not yet taken is still free. When that count is short
too, the stock is gone (as of the last commit) and the claim is refused at once. When it is
not, the claim is tried again, with short pauses, until it gets its units or
``SKIPQUEUE_RESERVATION_LOCKED_WAIT`` seconds have passed: the refusal comes within that bound.
"""

from __future__ import annotations

import time

from django_skipqueue.conf import get_settings
from django_skipqueue.reservations.pools import free_units
from django_skipqueue.reservations.units import claim

#: First pause before a claim is tried again; it doubles up to LONGEST_PAUSE.
FIRST_PAUSE = 0.001
LONGEST_PAUSE = 0.016


def claim_or_wait(using: str, pool: tuple[int, int], quantity: int) -> list[int]:
    """Lock ``quantity`` free units; fewer only if that many are not free or the wait ran out.

    Every round claims the whole ``quantity`` again: the units this transaction already locked
    are not skipped by its own ``SKIP LOCKED``, so the answer grows as other locks go.
    """
    seqs = claim(using, pool, quantity)
    if len(seqs) >= quantity:
        return seqs
    wait = get_settings().RESERVATION_LOCKED_WAIT
    deadline, pause = time.monotonic() + wait, FIRST_PAUSE
    while committed_free(using, pool, quantity) >= quantity:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(pause, left))
        pause = min(pause * 2, LONGEST_PAUSE)
        seqs = claim(using, pool, quantity)
        if len(seqs) >= quantity:
            return seqs
    return seqs


def committed_free(using: str, pool: tuple[int, int], at_most: int) -> int:
    """Count the pool's free units as last committed, up to ``at_most``, without a lock."""
    return free_units(using, pool)[:at_most].count()
