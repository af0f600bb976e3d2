"""System checks of the reservation pools' database; ids on docs/reference/checks.md."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.db import connections

from django_skipqueue.checks import HINT
from django_skipqueue.conf import get_settings


@register()
def check_pool_database(**kwargs: Any) -> list[CheckMessage]:
    """Check the pools' database takes row locks with SKIP LOCKED (reads its version)."""
    alias = get_settings().RESERVATION_DATABASE
    if alias not in settings.DATABASES:
        return [
            Error(
                f"SKIPQUEUE_RESERVATION_DATABASE is {alias!r}, which is not in DATABASES.",
                hint=HINT,
                id="django_skipqueue.E101",
            )
        ]
    connection = connections[alias]
    if connection.vendor == "sqlite":
        return _sqlite(alias, connection.settings_dict)
    if not connection.features.has_select_for_update_skip_locked:
        return [
            Error(
                f"Database {alias!r} ({connection.vendor}) has no SELECT ... FOR UPDATE "
                "SKIP LOCKED, which reservation pools need.",
                hint=HINT,
                id="django_skipqueue.E102",
            )
        ]
    if connection.vendor == "mysql":
        return _isolation(alias, connection.settings_dict)
    return []


@register()
def check_pool_cap(**kwargs: Any) -> list[CheckMessage]:
    cap = get_settings().RESERVATION_POOL_CAP
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        return []
    return [
        Error(
            f"SKIPQUEUE_RESERVATION_POOL_CAP must be a positive integer, not {cap!r}.",
            hint=HINT,
            id="django_skipqueue.E103",
        )
    ]


def _isolation(alias: str, settings_dict: dict) -> list[CheckMessage]:
    level = settings_dict.get("OPTIONS", {}).get("isolation_level", "read committed")
    if level and level.lower() == "read committed":
        return []
    return [
        Warning(
            f"Database {alias!r} defaults to isolation_level={level!r}. The reservation API "
            "sets READ COMMITTED on each transaction it starts, but a call made inside your "
            "own atomic block runs at this level, where a claim on an empty pool takes gap "
            "locks that block restocks and deadlock.",
            hint=HINT,
            id="django_skipqueue.W101",
        )
    ]


def _sqlite(alias: str, settings_dict: dict) -> list[CheckMessage]:
    mode = settings_dict.get("OPTIONS", {}).get("transaction_mode")
    if mode and mode.upper() in ("IMMEDIATE", "EXCLUSIVE"):
        return []
    return [
        Warning(
            f"SQLite database {alias!r} has no row locks, so reservations take turns on the "
            "whole database; without OPTIONS transaction_mode='IMMEDIATE' concurrent ones fail "
            "with 'database is locked' instead of waiting. SQLite is for development.",
            hint=HINT,
            id="django_skipqueue.W102",
        )
    ]
