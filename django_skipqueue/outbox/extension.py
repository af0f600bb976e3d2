"""The outbox's part of the core's commands, dashboard and exporter (its Extension hooks).

Each function here is called by ``OutboxConfig``'s hook of the same name; the core never
imports this module. The figures are read by ``stats.py``, the relay run by ``process.py``.
"""

from __future__ import annotations

import argparse
import os
import signal
from argparse import ArgumentParser
from collections.abc import Iterator, Mapping
from enum import IntEnum
from typing import Any

from django.core.management.base import CommandError

from django_skipqueue.conf import get_settings
from django_skipqueue.durations import format_seconds
from django_skipqueue.extensions import HealthCheck, Panel, SideProcess, StatusSection
from django_skipqueue.management.arguments import positive_float, url_with_scheme
from django_skipqueue.outbox.stats import lag_problem, outbox_status

#: Read for ``runworkers --relay`` alone when the setting is None, as skipqueue_relay does.
BROKER_VARIABLE = "SKIPQUEUE_OUTBOX_BROKER_URL"


class OutboxHealth(IntEnum):
    """The exit status of ``skipqueue_health`` that the outbox adds."""

    OUTBOX_TOO_OLD = 6


def status_sections(using: str) -> list[StatusSection]:
    """The outbox's line of ``skipqueue_status`` and its ``"outbox"`` object in ``--json``."""
    status = outbox_status(using)
    if status is None:
        return []
    return [StatusSection("outbox", status.as_dict(), status.line())]


def health_checks() -> list[HealthCheck]:
    return [
        HealthCheck(
            OutboxHealth.OUTBOX_TOO_OLD,
            "an outbox message waited too long",
            _lag_problems,
            _add_max_outbox_age,
        )
    ]


def _add_max_outbox_age(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--max-outbox-age",
        type=positive_float,
        metavar="SECONDS",
        help="Longest acceptable wait of an unsent outbox message "
        "(default: SKIPQUEUE_HEALTH_MAX_OUTBOX_AGE).",
    )


def _lag_problems(using: str, options: Mapping[str, Any]) -> list[str]:
    limit = options.get("max_outbox_age") or get_settings().HEALTH_MAX_OUTBOX_AGE
    lag = lag_problem(outbox_status(using), limit)
    return [lag] if lag else []


def metrics(using: str) -> Iterator[Any]:
    """The outbox's gauges: messages per status, the oldest unsent message's age."""
    from django_skipqueue.monitoring.prometheus import (
        gauge,  # prometheus-client: only when scraped
    )

    status = outbox_status(using)
    if status is None:
        return
    yield gauge(
        "skipqueue_outbox_messages",
        "Outbox messages per status (pending, retry, dead).",
        [(("pending",), status.pending), (("retry",), status.retry), (("dead",), status.dead)],
        ["status"],
    )
    yield gauge(
        "skipqueue_outbox_oldest_unsent_age_seconds",
        "Seconds the oldest unsent outbox message has waited (0: none waits).",
        [((), status.oldest_unsent_age or 0.0)],
    )


def dashboard_panels(using: str) -> list[Panel]:
    """The outbox's section of the dashboard: depth, age, relays, publish rate."""
    status = outbox_status(using)
    if status is None:
        return []
    context = {
        "status": status,
        "oldest_unsent": format_seconds(status.oldest_unsent_age),
        "rate": f"{status.publish_rate:.1f}",
        "confirm": "-" if status.confirm_ms is None else f"{status.confirm_ms:.2f} ms",
    }
    return [Panel("admin/skipqueue_outbox/dashboard_panel.html", context)]


def runworkers_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--relay",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="Also run an outbox relay process, to URL "
        "(default: SKIPQUEUE_OUTBOX_BROKER_URL); needs django_skipqueue.outbox.",
    )


def side_processes(options: Mapping[str, Any]) -> list[SideProcess]:
    """The relay of ``runworkers --relay [URL]``, or nothing without the option."""
    url = relay_url(options.get("relay"))
    if url is None:
        return []

    def run(using: str, burst: bool) -> int:
        """Run the relay in the child (SIGTERM/SIGINT: after its round; SIGQUIT: now)."""
        from django_skipqueue.outbox.process import RelayProcess

        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        RelayProcess(using, url, burst=burst).run()
        return 0

    return [SideProcess("relay", run)]


def relay_url(option: str | None) -> str | None:
    """The broker of the relay child, checked and redacted in errors; None without --relay."""
    if option is None:
        return None
    from django_skipqueue.outbox.transports import SCHEMES, redact

    url = option or get_settings().OUTBOX_BROKER_URL or os.environ.get(BROKER_VARIABLE)
    if not url:
        raise CommandError(
            f"--relay needs a URL or {BROKER_VARIABLE} (a setting or an environment variable)."
        )
    try:
        return url_with_scheme(SCHEMES, shown=redact)(url)
    except argparse.ArgumentTypeError as error:
        raise CommandError(f"--relay {error}") from None
