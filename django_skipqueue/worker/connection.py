"""The worker's database connection: kept open between loops, backed off while it is down."""

from __future__ import annotations

import contextlib
import logging
import math
import random
from collections.abc import Iterator
from typing import Any

from django.db import Error, connections

from django_skipqueue.conf import get_settings
from django_skipqueue.db.outage import is_unreachable, outage

logger = logging.getLogger("django_skipqueue.worker")

#: Longest pause between reconnection attempts, in seconds.
MAX_DATABASE_PAUSE = 5.0
#: How long worker processes keep a connection when DATABASES says CONN_MAX_AGE=0.
WORKER_CONN_MAX_AGE = 600
#: mysqlclient's options that bound a connection's waits on the network, in whole seconds.
NETWORK_TIMEOUTS = ("connect_timeout", "read_timeout", "write_timeout")


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


def bound_network_waits(using: str) -> dict[str, int]:
    """Give this thread's connection to ``using`` the timeouts of SKIPQUEUE_DATABASE_TIMEOUT.

    A host whose network drops packets silently (a partition, a firewall that forgets the
    connection) leaves a query waiting until the kernel gives up on the TCP connection, which
    takes about fifteen minutes, hours for a read that nothing acknowledges. The worker's
    and the supervisor's own queries are short, so their connection gets timeouts that
    DATABASES' ``OPTIONS`` did not set, and a partitioned worker notices within that bound.
    Only the calling thread's connection changes: job code runs on other threads, on
    connections that keep DATABASES' options, since its queries may rightly run longer.

    Returns the options added (none on other databases than MySQL/MariaDB, or when the
    setting is None).
    """
    seconds = get_settings().DATABASE_TIMEOUT
    wrapper = connections[using]
    if seconds is None or wrapper.vendor != "mysql":
        return {}
    options = wrapper.settings_dict.get("OPTIONS") or {}
    added = {name: max(1, math.ceil(seconds)) for name in NETWORK_TIMEOUTS if name not in options}
    if added and not getattr(wrapper, "skipqueue_network_waits", None):
        plain = wrapper.get_connection_params

        def with_timeouts() -> dict[str, Any]:
            params = plain()
            for name, value in added.items():
                params.setdefault(name, value)
            return params

        wrapper.get_connection_params = with_timeouts  # type: ignore[method-assign]
        setattr(wrapper, "skipqueue_network_waits", added)  # noqa: B010 - once per connection
        wrapper.close()  # a connection opened before has no timeouts: the next one will
    return added
