"""The relay process: rounds while there is work, a wake-up or a poll when idle, a heartbeat,
reconnection with exponential backoff, and a graceful stop on SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from dataclasses import dataclass
from types import FrameType

from django.db import DatabaseError, close_old_connections

from django_skipqueue.backoff import exponential
from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.db.outage import is_unreachable, outage
from django_skipqueue.exceptions import BrokerUnavailable
from django_skipqueue.outbox import partitions
from django_skipqueue.outbox.interruptible import BrokerCalls, Interrupted, InterruptibleTransport
from django_skipqueue.outbox.models import OutboxRelay
from django_skipqueue.outbox.reach import BrokerReach, say_held
from django_skipqueue.outbox.relay import Relay, Round
from django_skipqueue.outbox.relays import named_partitions
from django_skipqueue.outbox.transports import Transport, redact, transport_for
from django_skipqueue.wakeup import Waker
from django_skipqueue.worker.owner import owner_id

logger = logging.getLogger("django_skipqueue.outbox.relay")

#: Seconds a relay waits before looking again when other relays hold every partition with work.
BLOCKED_PAUSE = 0.05
#: Failed rounds in a row after which a --burst relay gives up (exit 1): with the backoff of
#: 0.2 s then 0.4 s between them, a few seconds at most per broker or database timeout.
BURST_FAILURES = 3


@dataclass(slots=True)
class Totals:
    sent: int = 0
    retried: int = 0
    dead: int = 0
    resent: int = 0

    def add(self, done: Round) -> None:
        self.sent += done.sent
        self.retried += done.retried
        self.dead += done.dead
        self.resent += done.resent


class RelayProcess:
    """Run a relay until stopped, or (burst) until nothing is due."""

    def __init__(self, using: str, broker_url: str, *, burst: bool = False) -> None:
        self.using = using
        self.broker_url = broker_url
        self.burst = burst
        self.name = owner_id()
        self.totals = Totals()
        self._stop = False
        settings = get_settings()
        # Read at most WAKEUP_MAX_RATE times a second, like a worker: a flood of datagrams
        # (anyone who reaches the port can send them) causes a bounded number of rounds.
        self._waker = Waker(settings.WAKEUP_HOST, max_rate=settings.WAKEUP_MAX_RATE)
        #: Ends a call into the broker's client that a stop request outlives (a silent broker).
        self._calls = BrokerCalls()
        self._transport: Transport = InterruptibleTransport(transport_for(broker_url), self._calls)
        self._relay = Relay(using, self._transport, self.name)
        self._failures = 0
        self._declared = False
        self._said_held = False
        self._broker = BrokerReach(redact(broker_url))
        #: Partitions the last wake-up named, for the next round.
        self._hint: frozenset[int] | None = None
        #: When the last heartbeat was written, and the messages sent by then.
        self._last_beat = (time.monotonic(), 0)

    def run(self) -> Totals:
        settings = get_settings()
        partitions.ensure_partitions(self.using, settings.OUTBOX_PARTITIONS)
        self._register()
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            with self._calls.installed():
                self._run_loop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._unregister()
            self._waker.close()
        return self.totals

    def _run_loop(self) -> None:
        """The loop, and its cleanup, with a call into the broker ended by a stop request."""
        try:
            self._loop()
        except Interrupted:
            logger.warning(
                "stopped while the broker did not answer; what it did not confirm stays in the "
                "outbox, sent again later broker=%s",
                self._broker.broker,
            )
        finally:
            try:
                self._relay.give_back()
            except DatabaseError as error:
                logger.warning("could not give back the next claim error=%r", error)
            self._transport.close()

    def _loop(self) -> None:
        while not self._stop:
            hint = self._next_hint()
            done = self._round(hint)
            if hint and done is not None and not done.busy:
                continue  # the named partitions were taken or sent already: look everywhere
            if time.monotonic() - self._last_beat[0] >= get_settings().HEARTBEAT_SECONDS:
                self._beat(done)
            if done is not None and done.busy:
                continue
            if done is not None and done.blocked:
                if self.burst and not self._said_held:
                    self._said_held = True
                    say_held(self.using, get_settings().HEARTBEAT_SECONDS)
                # Other relays hold the partitions with work for one round: look again soon.
                self._waker.wait(BLOCKED_PAUSE, listen=True)
                continue
            if self.burst and done is not None:
                return
            self._idle(done is None)

    def _next_hint(self) -> frozenset[int] | None:
        """The partitions to lease first: those the last wake-up named, and any datagram since.

        Datagrams that came while the relay was busy are read now, before the round reads the
        outbox: a round without a hint covers them, and none is left to wake the relay for
        nothing after it.
        """
        hint, self._hint = self._hint, None
        since = self._waker.drain_datagrams()
        if hint is None or not since:
            return hint
        more = named_partitions(since)
        return None if more is None else hint | more

    def _round(self, hint: frozenset[int] | None = None) -> Round | None:
        """Run a round; None if the broker or the database failed (the caller backs off)."""
        try:
            if self._failures or not self._declared:
                self._connect()
            done = self._relay.run_round(hint)
        except BrokerUnavailable as error:
            self._broker.failed(error)
            self._failed(error)
            return None
        except DatabaseError as error:
            close_old_connections()
            self._database_failed(error)
            return None
        self._failures = 0
        self._broker.recovered()
        outage(self.using).recovered()
        self.totals.add(done)
        return done

    def _connect(self) -> None:
        """(Re)connect; the first time, declare the destinations (SKIPQUEUE_OUTBOX_DECLARE)."""
        self._transport.close()
        self._transport.connect()
        if not self._declared and get_settings().OUTBOX_DECLARE:
            topics = get_settings().OUTBOX_TOPICS
            self._transport.declare(sorted({d or t for t, d in topics.items()}))
        self._declared = True

    def _database_failed(self, error: DatabaseError) -> None:
        """An unreachable database is an outage (a line when it starts and ends); another
        error is a line per round."""
        if is_unreachable(error):
            outage(self.using).failed(error)
        else:
            logger.warning("relay round failed cause=database error=%r", error)
        self._failed(error)

    def _failed(self, error: Exception) -> None:
        """Count a failed round; a --burst relay gives up after BURST_FAILURES in a row."""
        self._failures += 1
        if self.burst and self._failures >= BURST_FAILURES:
            raise error

    def _idle(self, failing: bool) -> None:
        settings = get_settings()
        if failing:
            # The package's backoff: relays that lost the database together come back apart.
            delay = exponential(self._failures + 1, 0.1, settings.OUTBOX_RETRY_BACKOFF_MAX)
            self._waker.wait(delay, listen=False)
            return
        try:
            self._transport.keepalive()
        except BrokerUnavailable as error:
            self._broker.failed(error)
            self._failed(error)
            return
        heard = self._waker.wait(settings.OUTBOX_IDLE_POLL_SECONDS, listen=True)
        if heard:
            self._hint = named_partitions(heard)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop = True
        self._waker.poke()
        self._calls.stop_requested()  # may end a broker call: raises Interrupted there

    def _register(self) -> None:
        OutboxRelay.objects.using(self.using).create(
            name=self.name,
            hostname=socket.gethostname()[:255],
            pid=os.getpid(),
            broker=redact(self.broker_url)[:255],
            wakeup_address=self._waker.address,
        )

    def _beat(self, done: Round | None) -> None:
        now, sent = time.monotonic(), self.totals.sent
        before, sent_before = self._last_beat
        self._last_beat = (now, sent)
        try:
            OutboxRelay.objects.using(self.using).filter(name=self.name).update(
                last_heartbeat_at=DatabaseNow(),
                sent=sent,
                retried=self.totals.retried,
                dead=self.totals.dead,
                confirm_ms=done.confirm_seconds * 1000 if done and done.sent else None,
                publish_rate=(sent - sent_before) / max(now - before, 1e-3),
            )
        except DatabaseError as error:
            close_old_connections()
            if is_unreachable(error):  # the outage's lines say it: no traceback per heartbeat
                outage(self.using).failed(error)
            else:
                logger.warning("relay heartbeat failed error=%r", error)

    def _unregister(self) -> None:
        try:
            self._beat(None)
            OutboxRelay.objects.using(self.using).filter(name=self.name).update(
                stopped_at=DatabaseNow()
            )
        except DatabaseError as error:
            logger.warning("could not mark the relay stopped error=%r", error)
