"""Checks of the configuration a user writes: every SKIPQUEUE_* setting and the TASKS entry.

A misspelled name or key is otherwise ignored without a word (the default silently applies),
and a wrong value surfaces later, inside a web request or a worker.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.checks import CheckMessage, Error

from django_skipqueue.checks import HINT
from django_skipqueue.conf import PREFIX, SkipQueueSettings
from django_skipqueue.durations import parse_duration

if TYPE_CHECKING:
    from django_skipqueue.backend import SkipQueueBackend

#: Keys of a TASKS entry this backend reads (Django's own three).
ENTRY_KEYS = ("BACKEND", "QUEUES", "OPTIONS")
#: Keys of a SkipQueueBackend's OPTIONS.
OPTION_KEYS = ("DATABASE",)
#: Statuses SKIPQUEUE_PURGE_RETENTION may name.
RETENTION_KEYS = ("succeeded", "cancelled", "failed")

#: A rule returns None for a valid value, else what the value must be.
Rule = Callable[[object], str | None]


def whole(low: int, high: int | None = None) -> Rule:
    def rule(value: object) -> str | None:
        number = isinstance(value, int) and not isinstance(value, bool)
        if number and value >= low and (high is None or value <= high):  # type: ignore[operator]
            return None
        return f"a whole number from {low} to {high}" if high else f"a whole number >= {low}"

    return rule


def positive(value: object) -> str | None:
    """A number (int or float) greater than 0, such as a rate per second."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return None if number and value > 0 else "a number greater than 0"  # type: ignore[operator]


def or_none(rule: Rule) -> Rule:
    """``rule``, or None (which turns the feature off)."""

    def either(value: object) -> str | None:
        wanted = rule(value)
        return None if value is None or wanted is None else f"{wanted}, or None"

    return either


def seconds(*, zero: bool = False, none: bool = False) -> Rule:
    """A number of seconds or a duration string ("90s", "5m"); zero or None if allowed."""
    wanted = "a duration (seconds, or a string such as '90s' or '5m')"
    wanted += " of 0 or more" if zero else " greater than 0"
    wanted += ", or None" if none else ""

    def rule(value: object) -> str | None:
        if value is None:
            return None if none else wanted
        try:
            amount = parse_duration(value)
        except (ValueError, TypeError):
            return wanted
        return None if amount > timedelta(0) or (zero and not amount) else wanted

    return rule


def one_of(*kinds: type | None, wanted: str) -> Rule:
    def rule(value: object) -> str | None:
        ok = any(value is None if kind is None else isinstance(value, kind) for kind in kinds)
        return None if ok else wanted

    return rule


def aliases(value: object) -> str | None:
    wanted = "a list of aliases in DATABASES"
    if not isinstance(value, list | tuple):
        return wanted
    return None if all(alias in settings.DATABASES for alias in value) else wanted


def dotted_names(value: object) -> str | None:
    wanted = "a list of dotted module names"
    if not isinstance(value, list | tuple):
        return wanted
    valid = all(
        isinstance(name, str) and all(part.isidentifier() for part in name.split("."))
        for name in value
    )
    return None if valid else wanted


def retention(value: object) -> str | None:
    wanted = "a dict of status -> duration or None"
    if not isinstance(value, Mapping):
        return wanted
    check = seconds(none=True)
    bad = [key for key, age in value.items() if key in RETENTION_KEYS and check(age)]
    return f"{wanted} (not {value[bad[0]]!r} for {bad[0]!r})" if bad else None


RULES: dict[str, Rule] = {
    "MAX_ATTEMPTS": whole(1, 1000),  # as the task option max_attempts
    "LEASE_SECONDS": seconds(),
    "RETRY_BACKOFF": seconds(zero=True),
    "RETRY_BACKOFF_MAX": seconds(zero=True),
    "MAX_SNOOZES": whole(0, 1_000_000),  # as the task option max_snoozes
    "MAX_PAYLOAD_BYTES": whole(1),
    "MAX_RESULT_BYTES": whole(1),
    "MAX_TRACEBACK_CHARS": whole(100),
    "TASK_MODULES": dotted_names,
    "HEARTBEAT_SECONDS": seconds(),
    "IDLE_POLL_SECONDS": seconds(),
    "WAKEUP": one_of(bool, wanted="True or False"),
    "WAKEUP_HOST": one_of(str, None, wanted="an address (a string) or None"),
    "WAKEUP_MAX_RATE": or_none(positive),
    "RELEASE_JOB_CONNECTIONS": one_of(bool, wanted="True or False"),
    "PREFETCH": or_none(whole(0)),  # None: adaptive, 0: off
    "PREFETCH_MAX_WAIT": seconds(),
    "DATABASE_TIMEOUT": seconds(none=True),
    "RESTART_BACKOFF_MAX": seconds(zero=True),
    "REAP_INTERVAL": seconds(),
    "PROMOTE_INTERVAL": seconds(),
    "MAINTENANCE_BATCH": whole(1),
    "PURGE_RETENTION": retention,
    "PURGE_INTERVAL": seconds(none=True),
    "PURGE_CHUNK": whole(1),
    "PURGE_CHUNK_SECONDS": seconds(),
    "PURGE_SLEEP": seconds(zero=True),
    "PURGE_REPLICAS": aliases,
    "PURGE_MAX_REPLICA_LAG": seconds(zero=True),
    "PURGE_ARCHIVE": one_of(bool, wanted="True or False"),
    "STATUS_COUNT_CAP": whole(1),
    "WORKER_STALE_SECONDS": seconds(),
    "HEALTH_MAX_READY_AGE": seconds(),
    "HEALTH_MAX_REAPER_AGE": seconds(),
    "HEALTH_MAX_HISTORY_LENGTH": or_none(whole(1)),
    "HEALTH_MAX_TRANSACTION_AGE": seconds(none=True),
    "METRICS_TOKEN": one_of(str, None, wanted="a string or None"),
    "TRACING": one_of(bool, wanted="True or False"),
    "PAUSE_CACHE_SECONDS": seconds(zero=True),
    "METRICS_RETENTION_SECONDS": seconds(),
    "PRUNE_INTERVAL": seconds(),
    "OUTBOX_BATCH": whole(1),
    "OUTBOX_IN_FLIGHT_PER_KEY": whole(1),
    "OUTBOX_LEASE_SECONDS": seconds(),
    "OUTBOX_MAX_ATTEMPTS": whole(1, 1000),
    "OUTBOX_RETRY_BACKOFF": seconds(zero=True),
    "OUTBOX_RETRY_BACKOFF_MAX": seconds(zero=True),
    "OUTBOX_MAX_PAYLOAD_BYTES": whole(1),
    "OUTBOX_DECLARE": one_of(bool, wanted="True or False"),
    "OUTBOX_IDLE_POLL_SECONDS": seconds(),
    "HEALTH_MAX_OUTBOX_AGE": seconds(),
    "HEALTH_MAX_SCHEDULE_LAG": seconds(),
    "RESERVATION_SWEEP_INTERVAL": seconds(),
    "RESERVATION_LOCKED_WAIT": seconds(zero=True),
    "SCHEDULER_INTERVAL": seconds(),
    "SCHEDULER_GRACE": seconds(),
    "SCHEDULER_TICK_RETENTION": seconds(),
}
#: Settings with checks of their own: E005, the outbox's E201-E204, the reservations' E101/E103,
#: the schedules' E301-E304 (and E104, E205, E305 for any of them set without its app).
CHECKED_ELSEWHERE = frozenset(
    {
        "WAKEUP_FANOUT",
        "OUTBOX_BROKER_URL",
        "OUTBOX_TOPICS",
        "OUTBOX_PARTITIONS",
        "RESERVATION_DATABASE",
        "RESERVATION_POOL_CAP",
        "SCHEDULES",
    }
)


def check_settings(**kwargs: object) -> list[CheckMessage]:
    """Check every SKIPQUEUE_* setting: known names, valid values, known retention statuses."""
    return [
        *_unknown_settings(),
        *_invalid_values(),
        *_unknown_retention_keys(),
        *_apps_missing(),
    ]


#: Each optional app, the settings that belong to it (by name or prefix) and the id of the
#: error when one of them is set while the app is not installed: it would do nothing.
APP_SETTINGS = {
    "django_skipqueue.outbox": (("OUTBOX_", "HEALTH_MAX_OUTBOX_AGE"), "django_skipqueue.E205"),
    "django_skipqueue.reservations": (("RESERVATION_",), "django_skipqueue.E104"),
    "django_skipqueue.scheduling": (
        ("SCHEDULES", "SCHEDULER_", "HEALTH_MAX_SCHEDULE_LAG"),
        "django_skipqueue.E305",
    ),
}


def _apps_missing() -> Iterator[CheckMessage]:
    """Name the optional app whose settings are set (not to their default) but not installed."""
    from django.apps import apps

    defaults = SkipQueueSettings()
    for app, (prefixes, check_id) in APP_SETTINGS.items():
        if apps.is_installed(app):
            continue
        names = [
            PREFIX + f.name
            for f in fields(SkipQueueSettings)
            if f.name.startswith(prefixes)
            and getattr(settings, PREFIX + f.name, getattr(defaults, f.name))
            != getattr(defaults, f.name)
        ]
        if names:
            yield Error(
                f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} set, but {app!r} is "
                "not in INSTALLED_APPS: nothing would use them. Add it to INSTALLED_APPS (next "
                "to 'django_skipqueue'), then run migrate.",
                hint=HINT,
                id=check_id,
            )


def _unknown_settings() -> Iterator[CheckMessage]:
    known = [PREFIX + f.name for f in fields(SkipQueueSettings)]
    for name in dir(settings):
        if name.startswith(PREFIX) and name not in known:
            yield Error(
                f"Unknown setting {name}.",
                hint=did_you_mean(name, known) + HINT,
                id="django_skipqueue.E007",
            )


def _invalid_values() -> Iterator[CheckMessage]:
    for name, rule in RULES.items():
        if not hasattr(settings, PREFIX + name):
            continue
        value = getattr(settings, PREFIX + name)
        wanted = rule(value)
        if wanted is not None:
            message = f"{PREFIX}{name} must be {wanted}, not {value!r}."
            yield Error(message, hint=HINT, id="django_skipqueue.E008")


def _unknown_retention_keys() -> Iterator[CheckMessage]:
    value = getattr(settings, PREFIX + "PURGE_RETENTION", {})
    for key in value if isinstance(value, Mapping) else ():
        if key not in RETENTION_KEYS:
            yield Error(
                f"{PREFIX}PURGE_RETENTION names an unknown status {key!r}; a status missing "
                "from it is never purged.",
                hint=did_you_mean(key, RETENTION_KEYS) + HINT,
                id="django_skipqueue.E009",
            )


def check_entry(backend: SkipQueueBackend) -> list[CheckMessage]:
    """Check the backend's TASKS entry: known keys, QUEUES a list, known OPTIONS."""
    found: list[CheckMessage] = [
        _unknown_key(backend, f"TASKS[{backend.alias!r}]", key, ENTRY_KEYS)
        for key in backend.params
        if key not in ENTRY_KEYS
    ]
    found += [
        _unknown_key(backend, f"TASKS[{backend.alias!r}]['OPTIONS']", key, OPTION_KEYS)
        for key in backend.options
        if key not in OPTION_KEYS
    ]
    queues = backend.params.get("QUEUES", [])
    if not isinstance(queues, list | tuple):
        message = f"TASKS[{backend.alias!r}]['QUEUES'] must be a list of names, not {queues!r}."
        found.append(Error(message, hint=HINT, id="django_skipqueue.E010"))
    return found


def _unknown_key(backend: SkipQueueBackend, where: str, key: str, known: tuple) -> Error:
    return Error(
        f"{where} has an unknown key {key!r}.",
        hint=did_you_mean(key, known) + HINT,
        id="django_skipqueue.E010",
    )


def queue_not_configured(backend: SkipQueueBackend, queue: str) -> str:
    """Explain a task's queue that the backend's QUEUES lacks, and a likely misspelled key.

    The message begins with Django's own, which code written to Django may look for.
    """
    text = (
        f"Queue {queue!r} is not valid for backend. "
        f"It is not in the QUEUES of task backend {backend.alias!r} "
        f"({', '.join(backend.queue_names)}): add it to TASKS[{backend.alias!r}]['QUEUES']."
    )
    for key in backend.params:
        if key not in ENTRY_KEYS and _closest(key, ENTRY_KEYS) == "QUEUES":
            text += f" (TASKS[{backend.alias!r}] has a key {key!r}: did you mean 'QUEUES'?)"
    return text


def _closest(name: str, known: tuple | list) -> str | None:
    matches = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(name: str, known: tuple | list) -> str:
    """Return "Did you mean 'X'? " for the closest known name, or nothing."""
    match = _closest(name, known)
    return f"Did you mean {match!r}? " if match else ""
