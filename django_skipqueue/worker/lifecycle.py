"""Small pieces of a worker's life: idle and fault backoff, connections, memory, job log lines."""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import Error, connections
from django.tasks.signals import task_finished

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.db.outage import is_unreachable, outage
from django_skipqueue.queues import backend_class
from django_skipqueue.worker.executor import Outcome
from django_skipqueue.worker.recording import finished_result

logger = logging.getLogger("django_skipqueue.worker")

#: First pause after an empty claim round; it doubles up to the idle cap.
FIRST_IDLE_PAUSE = 0.01
#: Longest pause between reconnection attempts, in seconds.
MAX_DATABASE_PAUSE = 5.0
#: How long worker processes keep a connection when DATABASES says CONN_MAX_AGE=0.
WORKER_CONN_MAX_AGE = 600


class IdleBackoff:
    """When to claim next: at once while there is work, exponentially later when there is not."""

    def __init__(self, cap: float) -> None:
        self.cap, self.pause, self.next_claim_at = cap, 0.0, 0.0

    def claimed(self, got: int, wanted: int, *, woken_reliably: bool = False) -> None:
        """Plan the next claim after one that took ``got`` of ``wanted`` jobs.

        A claim that got fewer than it asked for emptied the queue. Polling alone must then
        look again soon and back off slowly, or a job enqueued a moment later would wait for
        the idle cap. A worker that wake-ups reach (``woken_reliably``) hears of that job
        anyway, so it waits the cap at once: each claim round in the ramp would cost a query
        for nothing.
        """
        if got == wanted:
            self.pause = 0.0
        elif woken_reliably:
            self.pause = self.cap
        else:
            self.pause = (
                FIRST_IDLE_PAUSE if got else min(self.cap, max(FIRST_IDLE_PAUSE, self.pause * 2))
            )
        self.next_claim_at = time.monotonic() + self.pause

    @property
    def backlogged(self) -> bool:
        """Tell whether the last claim got every job it asked for: more are likely waiting."""
        return self.pause == 0.0


class DatabaseBackoff:
    """Pauses between attempts while the database is unreachable, with logging that stays sane."""

    def __init__(self, using: str) -> None:
        self.using, self.failures = using, 0

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


def clock_offset(using: str) -> timedelta:
    """Return how far the database clock is ahead of this host's clock."""
    return read_db_now(using) - datetime.now(UTC)


def resident_megabytes() -> float | None:
    """Return this process's resident memory in MiB (Linux), or None where unknown."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * _PAGE_SIZE / 2**20


try:
    import resource

    _PAGE_SIZE = resource.getpagesize()
except ImportError:  # pragma: no cover - not POSIX
    _PAGE_SIZE = 4096


def log_outcome(outcome: Outcome, owner: str) -> None:
    """Write the one key=value line of a finished attempt."""
    job = outcome.job
    status = "lost" if outcome.lost else outcome.status
    extra = ""
    if outcome.error and not outcome.lost:
        extra += " error=" + outcome.error["exception_class_path"]
    if outcome.status == "retry" and not outcome.lost:
        extra += f" retry_in={outcome.retry_in:.2f}"
    level = logging.WARNING if outcome.lost or outcome.status == "failed" else logging.INFO
    logger.log(
        level,
        "job=%s task=%s queue=%s attempt=%s status=%s duration_ms=%.1f worker=%s%s",
        job.pk, job.task_path, job.queue_name, job.attempts, status,
        outcome.duration * 1000, owner, extra,
    )  # fmt: skip


def send_finished(outcome: Outcome, backend_alias: str) -> None:
    """Send ``task_finished`` for a recorded attempt; a failing receiver is logged, not fatal.

    The sender is the configured backend's class. For an attempt that raised, the signal is
    sent while its exception is being handled, as Django's backends do: receivers (Django's
    own logs the failure) find it in ``sys.exc_info()``.
    """
    result = finished_result(outcome, backend_alias)
    if result is None:
        return
    sender = backend_class(backend_alias)
    if outcome.exception is None:
        _log_failed_receivers(task_finished.send_robust(sender, task_result=result))
        return
    try:
        raise outcome.exception
    except BaseException:
        _log_failed_receivers(task_finished.send_robust(sender, task_result=result))


def _log_failed_receivers(responses: Sequence[tuple[Any, Any]]) -> None:
    for receiver, response in responses:
        if isinstance(response, Exception):
            logger.error("task_finished receiver %r failed: %r", receiver, response)
