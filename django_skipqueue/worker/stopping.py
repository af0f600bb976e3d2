"""How a process stops: the signals it obeys, gracefully by a deadline or at once.

SIGTERM and SIGINT ask for a graceful stop; a second one, or SIGQUIT, for an immediate one.
Handlers only note the signal and wake the main loop, which acts on it between two steps.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
GRACEFUL = "graceful"
IMMEDIATE = "immediate"


class Stopping:
    """A process's stop request: none yet, graceful (by a deadline) or immediate."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.mode: str | None = None
        self.reason = ""
        self.deadline = float("inf")
        self.exit_code = 0
        #: Signals received and not yet acted on (shared with a forked child, see supervisor).
        self.signals: list[int] = []
        self._wake = wake

    @property
    def requested(self) -> bool:
        return self.mode is not None

    @property
    def overdue(self) -> bool:
        return time.monotonic() >= self.deadline

    @contextmanager
    def signals_handled(self, signums: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
        """Note ``signums`` while the block runs; the previous handlers come back after it."""
        previous = {signum: signal.signal(signum, self._note) for signum in signums}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        self._wake()

    def received(self) -> Iterator[tuple[str, str]]:
        """Yield (mode, signal name) for each stop signal received since the last call."""
        while self.signals:
            signum = self.signals.pop(0)
            if signum in STOP_SIGNALS:
                forced = signum == signal.SIGQUIT or self.requested
                yield (IMMEDIATE if forced else GRACEFUL), signal.Signals(signum).name

    def request(self, mode: str, reason: str, *, within: float, exit_code: int = 0) -> bool:
        """Note a stop that must be over ``within`` seconds from now; True if it is news.

        A graceful request after another stop changes nothing; an immediate one always wins.
        """
        if mode == IMMEDIATE:
            news = self.mode != IMMEDIATE
            self.mode = IMMEDIATE
            self.reason = self.reason or reason
            self.deadline = min(self.deadline, time.monotonic() + within)
            return news
        if self.mode is not None:
            return False
        self.mode = GRACEFUL
        self.reason = reason
        self.exit_code = exit_code
        self.deadline = time.monotonic() + within
        return True
