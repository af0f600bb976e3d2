"""Durations as people write them in settings and on the command line: "7d", "12h", "90s"."""

from __future__ import annotations

import re
from datetime import timedelta

UNITS = {"w": 7 * 86_400, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([wdhms]?)\s*$")


def parse_duration(value: object) -> timedelta:
    """Return ``value`` ("7d", "12h", "30m", "45s", "1w", a number of seconds) as a timedelta.

    Raises ValueError with a message fit for a user: this is also an argparse ``type=``.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return timedelta(seconds=value)
    match = PATTERN.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"{value!r} is not a duration: use a number followed by w, d, h, m or s "
            "(for example 7d, 12h, 90s)."
        )
    number, unit = match.groups()
    return timedelta(seconds=float(number) * UNITS[unit or "s"])


def format_seconds(seconds: float | None) -> str:
    """Render a number of seconds the short way people read it: "4s", "3m12s", "2h05m"."""
    if seconds is None:
        return "-"
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    return f"{hours // 24}d{hours % 24:02d}h"
