"""System checks of the outbox settings (ids listed in docs/reference/checks.md)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register

from django_skipqueue.conf import get_settings
from django_skipqueue.outbox.transports import SCHEMES
from django_skipqueue.outbox.transports.names import subject_problem

HINT = "See docs/reference/checks.md and the outbox settings in docs/reference/settings.md."


@register()
def check_outbox_settings(**kwargs: Any) -> list[CheckMessage]:
    settings = get_settings()
    errors: list[CheckMessage] = []
    url = settings.OUTBOX_BROKER_URL
    if url is not None and url.partition("://")[0] not in SCHEMES:
        errors.append(
            Error(
                f"SKIPQUEUE_OUTBOX_BROKER_URL has no outbox transport: {url.partition(':')[0]!r}.",
                hint=HINT,
                id="django_skipqueue.E201",
            )
        )
    if not 1 <= settings.OUTBOX_PARTITIONS <= 1024:
        errors.append(
            Error(
                "SKIPQUEUE_OUTBOX_PARTITIONS must be 1 to 1024.",
                hint=HINT,
                id="django_skipqueue.E202",
            )
        )
    bad = [t for t in settings.OUTBOX_TOPICS if not isinstance(t, str) or not t or len(t) > 255]
    if bad:
        errors.append(
            Error(
                f"SKIPQUEUE_OUTBOX_TOPICS has invalid topic names: {bad!r}.",
                hint=HINT,
                id="django_skipqueue.E203",
            )
        )
    errors += _check_destinations(settings.OUTBOX_TOPICS)
    return errors


def _check_destinations(topics: Any) -> list[CheckMessage]:
    """A destination (the topic's name when None) is an exchange or a NATS subject prefix."""
    errors: list[CheckMessage] = []
    for topic, destination in topics.items():
        name = destination or topic
        problem = subject_problem(name) if isinstance(name, str) else "is not a string"
        if problem is not None:
            errors.append(
                Error(
                    f"SKIPQUEUE_OUTBOX_TOPICS: the destination {name!r} of topic {topic!r} "
                    f"{problem}; exchanges and subjects take no blanks, control characters, "
                    "'*' or '>'.",
                    hint=HINT,
                    id="django_skipqueue.E204",
                )
            )
    return errors
