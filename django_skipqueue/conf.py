"""Typed access to the SKIPQUEUE_* settings, each default declared once and read lazily."""

from __future__ import annotations

from dataclasses import dataclass, fields

from django.conf import settings

PREFIX = "SKIPQUEUE_"


@dataclass(frozen=True, slots=True)
class SkipQueueSettings:
    """Every SKIPQUEUE_* setting with its default (the field name without the prefix)."""

    #: Attempts a job gets before it ends ``failed`` (a lost lease spends one too).
    MAX_ATTEMPTS: int = 5
    #: Seconds a claim is leased for; workers renew it while the job runs.
    LEASE_SECONDS: float = 60.0
    #: Base of the exponential retry backoff, in seconds.
    RETRY_BACKOFF: float = 2.0
    #: Upper bound of one retry delay, in seconds.
    RETRY_BACKOFF_MAX: float = 3600.0
    #: Largest accepted JSON payload (args and kwargs together), in bytes.
    MAX_PAYLOAD_BYTES: int = 256 * 1024
    #: Longest traceback stored per failed attempt, in characters (the middle is elided).
    MAX_TRACEBACK_CHARS: int = 20_000

    # Workers (runworkers).
    #: Seconds between heartbeats (lease renewal, workers table); shorter for short leases.
    HEARTBEAT_SECONDS: float = 5.0
    #: Longest pause per queue between two claim rounds of an idle worker, in seconds:
    #: an idle worker makes at most about one claim query per this many seconds.
    IDLE_POLL_SECONDS: float = 1.0
    #: Send a wake-up datagram to idle workers after an enqueue commits.
    WAKEUP: bool = True
    #: Address workers listen on for wake-ups (and advertise in the workers table); use the
    #: host's private address when web servers run on other hosts. None: no listener.
    WAKEUP_HOST: str | None = "127.0.0.1"
    #: Restart delay of a worker process that keeps dying doubles up to this many seconds.
    RESTART_BACKOFF_MAX: float = 30.0


def get_settings() -> SkipQueueSettings:
    """Return the current settings; read at call time so override_settings works."""
    overrides = {
        f.name: getattr(settings, PREFIX + f.name)
        for f in fields(SkipQueueSettings)
        if hasattr(settings, PREFIX + f.name)
    }
    return SkipQueueSettings(**overrides)
