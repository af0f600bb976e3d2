"""The worker's database connection: kept open between loops, backed off while it is down."""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator

from django.db import Error, connections

from django_skipqueue.db.outage import is_unreachable, outage

logger = logging.getLogger("django_skipqueue.worker")

#: Longest pause between reconnection attempts, in seconds.
MAX_DATABASE_PAUSE = 5.0
#: How long worker processes keep a connection when DATABASES says CONN_MAX_AGE=0.
WORKER_CONN_MAX_AGE = 600


class DatabaseBackoff:
    """Pauses between attempts while the database is unreachable, with logging that stays sane."""

    def __init__(self, using: str) -> None:
        self.using = using
        self.failures = 0

    def failed(self, error: Error) -> float:
        """Drop the broken connection; return how long to wait before trying again."""
        self.failures += 1
        delay = min(MAX_DATABASE_PAUSE, 0.1 * 2 ** (self.failures - 1)) * random.uniform(0.5, 1)
        if is_unreachable(error):
            outage(self.using).failed(error)
        elif self.failures == 1 or self.failures % 10 == 0:
            logger.warning(
                "database error=%r failures=%s retry_in=%.2f", error, self.failures, delay
            )
        with contextlib.suppress(Error):  # already gone
            connections[self.using].close()
        return delay

    def reset(self) -> None:
        if self.failures:
            outage(self.using).recovered()
        self.failures = 0


@contextlib.contextmanager
def connections_kept_open() -> Iterator[None]:
    """Let a worker reuse connections; close_old_connections() still checks them every loop.

    With CONN_MAX_AGE=0 (Django's default, right for requests) every loop would reconnect.
    """
    changed = [
        settings_dict
        for settings_dict in (connections.settings[alias] for alias in connections)
        if settings_dict.get("CONN_MAX_AGE", 0) == 0
    ]
    for settings_dict in changed:
        settings_dict["CONN_MAX_AGE"] = WORKER_CONN_MAX_AGE
    try:
        yield
    finally:
        for settings_dict in changed:
            settings_dict["CONN_MAX_AGE"] = 0
