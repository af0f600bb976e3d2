"""The argument types and options that the management commands share.

Each type is a module-level function that argparse calls (``type=``) with the text as typed: it
returns the value, or raises ArgumentTypeError with a sentence that says what to type instead,
so a mistake ends with the usage and exit status 2 before anything runs. What can only be
checked against the settings (the ``--backend`` alias) raises CommandError from the command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from datetime import timedelta
from enum import Enum
from urllib.parse import urlsplit

from django.core.management.base import CommandError
from django.db import connections

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import InvalidTaskBackend, task_backends
from django_skipqueue.durations import parse_duration

__all__ = [
    "accept_skip_checks",
    "add_backend",
    "backend_named",
    "database_named",
    "duration",
    "int_between",
    "non_negative_float",
    "positive_float",
    "positive_int",
    "prefetch_count",
    "queue_list",
    "url_with_scheme",
    "values_of",
]


def positive_int(text: str) -> int:
    """An integer of 1 or more (processes, threads, rows)."""
    value = _number(int, text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def prefetch_count(text: str) -> int | str:
    """A number of jobs to claim ahead (0 or more), or ``auto`` (adaptive)."""
    if text.strip().lower() == "auto":
        return "auto"
    value = _number(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, or auto, not {value}")
    return value


def positive_float(text: str) -> float:
    """A number greater than 0 (an interval, a lease, a threshold in seconds)."""
    value = _number(float, text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {value:g}")
    return value


def non_negative_float(text: str) -> float:
    """A number of 0 or more (a pause that may be none)."""
    value = _number(float, text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value:g}")
    return value


def int_between(low: int, high: int, unit: str) -> Callable[[str], int]:
    """Return a type that accepts a whole number of ``unit`` from ``low`` to ``high``."""

    def parse(text: str) -> int:
        value = _number(int, text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low} to {high} {unit}, not {value}")
        return value

    parse.__name__ = unit
    return parse


def duration(text: str) -> timedelta:
    """An age such as 7d, 12h, 90m, 30s or a number of seconds."""
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def queue_list(text: str) -> list[str]:
    """Comma-separated queue names, in order (checked against the backend later)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one queue name")
    return names


def url_with_scheme(
    schemes: Iterable[str], shown: Callable[[str], str] = str
) -> Callable[[str], str]:
    """Return a type that accepts a URL of one of ``schemes`` that names a host; its errors
    show the URL as ``shown`` returns it (without its password)."""
    known = sorted(schemes)

    def parse(text: str) -> str:
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{shown(text)!r} is not a URL: {error}") from None
        if parts.scheme not in known:
            kinds = ", ".join(f"{scheme}://" for scheme in known)
            raise argparse.ArgumentTypeError(f"must start with {kinds}, not {shown(text)!r}")
        if not parts.hostname:
            raise argparse.ArgumentTypeError(f"names no host: {shown(text)!r}")
        return text

    parse.__name__ = "URL"
    return parse


def values_of(choices: Iterable[Enum | str]) -> list[str]:
    """The values to type for ``choices``, so that usage and errors show ``failed``, not
    ``JobStatus.FAILED``."""
    return [str(choice.value) if isinstance(choice, Enum) else choice for choice in choices]


def add_backend(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--backend ALIAS``: ``what`` is the help sentence, the default is appended."""
    parser.add_argument(
        "--backend", default="default", metavar="ALIAS", help=f"{what} (default: %(default)r)."
    )


def backend_named(alias: str) -> SkipQueueBackend:
    """Return the SkipQueueBackend that TASKS names ``alias``; CommandError if there is none."""
    try:
        backend = task_backends[alias]
    except InvalidTaskBackend:
        raise CommandError(f"There is no task backend {alias!r} in TASKS.") from None
    if not isinstance(backend, SkipQueueBackend):
        kind = type(backend).__name__
        raise CommandError(f"Task backend {alias!r} is a {kind}, not a SkipQueueBackend.")
    return backend


def database_named(alias: str) -> str:
    """Return ``alias`` if DATABASES has it; CommandError if not."""
    if alias not in connections.settings:
        names = ", ".join(sorted(connections.settings))
        raise CommandError(f"There is no database {alias!r} in DATABASES (there is {names}).")
    return alias


def accept_skip_checks(parser: argparse.ArgumentParser) -> None:
    """Take ``--skip-checks`` in a command that runs no system checks, as every command does."""
    parser.add_argument(
        "--skip-checks",
        action="store_true",
        help="Accepted like in every command; this one runs no system checks anyway.",
    )


def _number[N: (int, float)](kind: type[N], text: str) -> N:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
