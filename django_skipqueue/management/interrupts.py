"""Graceful stop for the maintenance commands: the first SIGINT/SIGTERM asks, the second forces."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_requested() -> Iterator[threading.Event]:
    """Yield an event set by the first SIGINT or SIGTERM; a second one raises KeyboardInterrupt.

    The work checks the event between two units (a chunk, a pass) and stops cleanly; the
    second signal interrupts at once, and the open transaction, if any, is rolled back.
    """
    stop = threading.Event()

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {signum: signal.signal(signum, handle) for signum in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
