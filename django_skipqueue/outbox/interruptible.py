"""A relay's calls into its broker's client, ended when a stop request outlives them.

pika and nats-py wait inside blocking calls: a handshake, the confirms of a batch, a polite
close. A signal handler that only sets a flag is acted on once the call returns, and against a
broker that accepts the connection but never answers (a process stopped with SIGSTOP, a
firewall that drops packets, a hung load balancer) that took up to the client's own timeouts:
15 s for pika's handshake, 30 s for a batch's confirms, as long again for the close. Under
systemd or Kubernetes, ``stop`` then waits, and the process is killed.

So a stop request gives the call under way a grace of its own, then raises :class:`Interrupted`
inside it, from a SIGALRM handler (``signal.setitimer``): a connect or a declare has nothing
in flight and is abandoned at once; a batch's confirms get STOP_GRACE seconds (a broker that
answers, answers within them: a graceful stop sends no duplicate); a keepalive (a few
milliseconds) and a close get CLOSE_GRACE. A second signal ends the call at once. The
transport is then given up without a word to the broker: its unconfirmed messages stay in the
outbox and the next round sends them again, marked as possible duplicates. The relay's
database work during a confirm wait (the ``while_waiting`` callable) is never interrupted.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from django_skipqueue.outbox.transports import Outgoing, Result, Transport

logger = logging.getLogger("django_skipqueue.outbox.relay")

#: Seconds a batch's confirms may still take after a stop request.
STOP_GRACE = 2.0
#: Seconds a polite close may take once the relay stops.
CLOSE_GRACE = 1.0
#: Seconds between two tries when an interruption was swallowed (by an asyncio task's step).
AGAIN = 0.2


class Interrupted(BaseException):
    """A broker call given up because the relay was asked to stop (not an ``Exception``: the
    clients' and transports' ``except Exception`` must not take it for a broker error)."""


class BrokerCalls:
    """Whether the relay is inside a broker call, and the stop request that may end it."""

    def __init__(self) -> None:
        self.stopping = False
        #: The grace of the call under way; None outside any call.
        self._grace: float | None = None

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGALRM, the end of a call's grace, while the relay runs."""
        previous = signal.signal(signal.SIGALRM, self._on_alarm)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def stop_requested(self) -> None:
        """Called by the relay's SIGTERM/SIGINT handler: the first starts the call's grace,
        the second ends the call."""
        second, self.stopping = self.stopping, True
        if self._grace is not None:
            if second:
                self._interrupt()
            self._arm(self._grace)

    @contextmanager
    def call(self, grace: float) -> Iterator[None]:
        """Mark a call into the broker's client: a stop request gives it ``grace`` seconds."""
        outer, self._grace = self._grace, grace
        try:
            if self.stopping:
                self._arm(grace)
            yield
        finally:
            self._grace = outer
            if outer is None:
                signal.setitimer(signal.ITIMER_REAL, 0)

    def outside(self, work: Callable[[], object]) -> Callable[[], None]:
        """``work`` run outside the call under way (the relay's database work): not
        interrupted, and the call's grace starts again once it is done."""

        def run() -> None:
            grace, self._grace = self._grace, None
            signal.setitimer(signal.ITIMER_REAL, 0)
            try:
                work()
            finally:
                self._grace = grace
                if grace is not None and self.stopping:
                    self._arm(grace)

        return run

    def _arm(self, seconds: float) -> None:
        if seconds <= 0:
            self._interrupt()
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self._grace is not None and self.stopping:
            self._interrupt()

    def _interrupt(self) -> None:
        # Raised in whatever runs now: inside an asyncio task's step, the task takes it and
        # the loop goes on, so the alarm comes again until the call itself ends.
        signal.setitimer(signal.ITIMER_REAL, AGAIN)
        raise Interrupted


class InterruptibleTransport(Transport):
    """``inner``, each of its calls inside ``calls.call()`` with the grace it deserves."""

    def __init__(self, inner: Transport, calls: BrokerCalls) -> None:
        self.inner = inner
        self.calls = calls
        #: The broker, as OpenTelemetry names messaging systems (see tracing.py).
        self.system = getattr(inner, "system", type(inner).__name__)

    def connect(self) -> None:
        with self.calls.call(0):
            self.inner.connect()

    def declare(self, destinations: Iterable[str]) -> None:
        with self.calls.call(0):
            self.inner.declare(destinations)

    def keepalive(self) -> None:
        # A few milliseconds on a broker that answers: a stop request lets it end.
        with self.calls.call(CLOSE_GRACE):
            self.inner.keepalive()

    def send_many(
        self, messages: Sequence[Outgoing], while_waiting: Callable[[], object] | None = None
    ) -> list[Result | None]:
        outside = None if while_waiting is None else self.calls.outside(while_waiting)
        with self.calls.call(STOP_GRACE):
            return self.inner.send_many(messages, while_waiting=outside)

    def close(self) -> None:
        """Close politely within CLOSE_GRACE once stopping; past it, give the connection up
        (the process exits and the system closes its socket)."""
        try:
            with self.calls.call(CLOSE_GRACE):
                self.inner.close()
        except Interrupted:
            logger.debug("the broker did not answer the close: connection given up")
