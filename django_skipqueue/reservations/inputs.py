"""Validation of what callers pass, before any statement runs: bad input holds nothing."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from django_skipqueue.conf import get_settings
from django_skipqueue.db.text import unstorable
from django_skipqueue.exceptions import InvalidReservation

#: Longest holder and reference strings (their columns' length).
MAX_LABEL = 200
BIGINT_RANGE = range(-(2**63), 2**63)


def pool_key(item: Any, location: Any) -> tuple[int, int]:
    """Return ``(item_id, location_id)`` from ids or from model instances (their ``pk``)."""
    return _id(item, "item"), _id(location, "location")


def _id(value: Any, name: str) -> int:
    value = getattr(value, "pk", value)
    if isinstance(value, bool) or not isinstance(value, int) or value not in BIGINT_RANGE:
        raise InvalidReservation(f"{name} must be an integer id or a saved model, not {value!r}")
    return value


def quantity(value: Any) -> int:
    """Check that ``value`` is a whole number of units between 1 and the pool cap."""
    cap = get_settings().RESERVATION_POOL_CAP
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
        raise InvalidReservation(
            f"quantity must be a whole number from 1 to {cap} "
            f"(SKIPQUEUE_RESERVATION_POOL_CAP), not {value!r}"
        )
    return value


def ttl_seconds(value: Any) -> float:
    """Check that ``value`` (seconds or a timedelta) is a positive, finite duration."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise InvalidReservation(f"ttl must be seconds or a timedelta, not {value!r}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidReservation(f"ttl must be positive, not {value!r}")
    return float(seconds)


def label(value: Any, name: str, *, required: bool) -> str:
    """Check a holder or reference: a string of at most 200 characters."""
    if not isinstance(value, str) or len(value) > MAX_LABEL or (required and not value):
        need = "a non-empty string" if required else "a string"
        raise InvalidReservation(f"{name} must be {need} of at most {MAX_LABEL} characters")
    problem = unstorable(value)
    if problem:
        raise InvalidReservation(f"{name} holds {problem}: no database stores it as text")
    return value
