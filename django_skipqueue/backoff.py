"""The one retry backoff of the package: exponential, capped, with "equal jitter".

A leaf (it imports nothing of the package), so jobs (``states.backoff_delay``), outbox
messages (``outbox.states``) and the worker's database pauses all wait the same way: things
that failed together (the jobs of one dead worker, the messages of one refused batch) must not
all come back at the same instant.
"""

from __future__ import annotations

import random
from typing import Protocol


class Uniform(Protocol):
    """What the backoff draws its jitter from: ``random``, or a seeded ``random.Random``."""

    def uniform(self, a: float, b: float) -> float: ...


def exponential(attempt: int, base: float, cap: float, rng: Uniform = random) -> float:
    """Return the seconds to wait after failed attempt ``attempt`` (1 for the first).

    The delay doubles with each attempt from ``base`` (``base * 2 ** (attempt - 1)``) up to
    ``cap``; its fixed half is kept and the other half drawn at random, so it lies in
    ``[delay / 2, delay]``. A base of 0 (or less) retries at once.
    """
    if base <= 0:
        return 0.0
    # An exponent past 1023 overflows a float; any cap is reached long before.
    delay = min(cap, base * 2.0 ** min(max(attempt - 1, 0), 1023))
    return delay / 2 + rng.uniform(0, delay / 2)
