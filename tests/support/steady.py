"""Assert a state of live processes once it holds still, not at one instant.

A scrape, a health probe or a figure read right after something started or died may catch a
moment: a scrape that timed out on a loaded machine, a worker not yet registered, a server not
yet listening. :func:`steady` reads again until the state holds for a few consecutive reads,
within a bound, then returns it; past the bound it fails with what it read last, so a state that
is wrong stays a failure and a wrong state that comes and goes is one too (it never settles).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import connections

#: Consecutive reads that must agree: a scrape interval or two of the suite's Prometheus.
READS = 3


def steady[T](
    read: Callable[[], T],
    holds: Callable[[T], bool],
    what: str,
    timeout: float = 60,
    interval: float = 0.25,
    reads: int = READS,
    transient: tuple[type[BaseException], ...] = (OSError,),
    describe: Callable[[T], str] = repr,
) -> T:
    """Read until ``holds`` is true of ``reads`` consecutive reads; return the last one.

    A read that raises one of ``transient`` (a refused or timed-out request) counts as a read
    that does not hold. Each read sees fresh rows: the test's connection is closed if unusable.
    A failure shows ``describe`` of the last read.
    """
    deadline = time.monotonic() + timeout
    in_a_row, last = 0, "nothing read"
    while True:
        try:
            value = read()
        except transient as error:
            in_a_row, last = 0, f"{type(error).__name__}: {error}"
        else:
            in_a_row, last = (in_a_row + 1 if holds(value) else 0), describe(value)
            if in_a_row >= reads:
                return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: not steady for {reads} reads within {timeout} s; last read: {last}"
            )
        time.sleep(interval)
        connections["default"].close_if_unusable_or_obsolete()


def steady_equal[T](
    read: Callable[[], T], expected: T, what: str, timeout: float = 60, reads: int = READS
) -> T:
    """Read until ``read()`` equals ``expected`` for consecutive reads (see :func:`steady`)."""
    return steady(
        read,
        lambda value: value == expected,
        what,
        timeout,
        reads=reads,
        describe=lambda value: difference(value, expected),
    )


def difference(value: object, expected: object) -> str:
    """``value`` and ``expected``; of two dicts, only the keys that differ."""
    if not isinstance(value, dict) or not isinstance(expected, dict):
        return f"{value!r} (expected {expected!r})"
    keys = [key for key in {**expected, **value} if value.get(key) != expected.get(key)]
    return ", ".join(
        f"{key!r}: {value.get(key)!r} (expected {expected.get(key)!r})" for key in keys
    )
