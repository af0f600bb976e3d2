"""The maintenance loop: promote, reap, prune and (optionally) purge, each on its own timer.

``runworkers`` runs one in its supervisor and ``skipqueue_reap --interval`` runs one alone.
Several can run at once (one per supervisor): every step locks its work with SKIP LOCKED.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import DatabaseError, close_old_connections

from django_skipqueue.conf import get_settings
from django_skipqueue.db.outage import is_unreachable, outage
from django_skipqueue.extensions import extensions
from django_skipqueue.flow import admission
from django_skipqueue.maintenance.promote import promote
from django_skipqueue.maintenance.prune import prune_metrics
from django_skipqueue.maintenance.purge import Purge, PurgeOptions
from django_skipqueue.maintenance.reap import reap, runner_id

logger = logging.getLogger("django_skipqueue.maintenance")

#: Longest stretch a scheduled purge runs (or waits for a replica) per turn of the loop.
PURGE_SLICE_SECONDS = 2.0
#: Seconds past a rate window's start at which the flow timer admits its waiting jobs.
FLOW_MARGIN = 0.005


@dataclass
class Timer:
    """A step that runs every ``interval`` seconds (monotonic clock)."""

    name: str
    interval: float
    step: Callable[[], object]
    due_at: float = 0.0


def app_timers(using: str) -> list[Timer]:
    """The steps installed apps add through their ``Extension.maintenance_steps(using)``.

    The loop knows no app: an app's sweep or scheduler is one more timer here.
    """
    return [
        Timer(name, interval, step)
        for extension in extensions()
        for name, interval, step in extension.maintenance_steps(using)
    ]


class Maintenance:
    """Run the maintenance steps of one queue database when they are due.

    A failing step (database down, deadlock past its retries) is logged and tried again at
    its next turn: the loop itself never dies of it.
    """

    def __init__(
        self,
        using: str = "default",
        *,
        reap_interval: float | None = None,
        promote_interval: float | None = None,
        purge_interval: float | None = None,
        runner: str | None = None,
    ) -> None:
        config = get_settings()
        self.using = using
        self.runner = runner or runner_id()
        self.purge_interval = config.PURGE_INTERVAL if purge_interval is None else purge_interval
        self._purge: Purge | None = None
        self.timers = [
            Timer("promote", promote_interval or config.PROMOTE_INTERVAL, self.promote),
            Timer("reap", reap_interval or config.REAP_INTERVAL, self.reap),
            Timer("prune", config.PRUNE_INTERVAL, self.prune),
            # Flow control: rate windows that open; due at the earliest one (see _next_wait).
            Timer("flow", promote_interval or config.PROMOTE_INTERVAL, self.flow),
        ]
        if self.purge_interval:
            self.timers.append(Timer("purge", self.purge_interval, self.purge))
        self.timers.extend(app_timers(using))

    def promote(self) -> int:
        return promote(self.using)

    def flow(self) -> int:
        return admission.wake_due(self.using)

    def reap(self) -> int:
        return reap(self.using, runner=self.runner).reclaimed

    def prune(self) -> int:
        return prune_metrics(self.using)

    def purge(self) -> int:
        """Purge by the retention settings, a slice of at most a few seconds per turn.

        A long purge (or one paused for replica lag) must not hold up promotion and
        reaping, so it keeps its place between turns and goes on at the next one.
        """
        if self._purge is None:
            options = PurgeOptions.from_settings(using=self.using)
            self._purge = Purge(options, runner=self.runner)
        finished = self._purge.run(max_seconds=PURGE_SLICE_SECONDS)
        deleted = self._purge.summary.deleted
        if finished:
            self._purge = None
        return deleted

    def run_due(self) -> float:
        """Run every step that is due; return the seconds until the next one is."""
        for timer in self.timers:
            if time.monotonic() >= timer.due_at:
                self._run_step(timer)
                timer.due_at = time.monotonic() + self._next_wait(timer)
        return max(0.0, min(t.due_at for t in self.timers) - time.monotonic())

    def run(self, stop: threading.Event) -> None:
        """Run the steps on their timers until ``stop`` is set."""
        while not stop.is_set():
            stop.wait(self.run_due())

    def _next_wait(self, timer: Timer) -> float:
        # An unfinished purge goes on soon; otherwise wait the whole interval.
        if timer.name == "purge" and self._purge is not None:
            return min(timer.interval, 1.0)
        if timer.name == "flow":
            try:
                wake = admission.seconds_to_next_wake(self.using)
            except DatabaseError:
                return timer.interval
            if wake is not None:
                # A little past the window's start, by the database clock.
                return min(timer.interval, wake + FLOW_MARGIN)
        return timer.interval

    def _run_step(self, timer: Timer) -> None:
        close_old_connections()
        try:
            timer.step()
        except DatabaseError as error:
            if is_unreachable(error):
                outage(self.using).failed(error)
            else:
                logger.exception("maintenance step=%s failed; retrying at next turn", timer.name)
            close_old_connections()
            return
        outage(self.using).recovered()
