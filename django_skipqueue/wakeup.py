"""Best-effort wake-up of idle workers, and the wait that listens for it.

Producer side: after an enqueue commits (``transaction.on_commit``), one small UDP datagram goes
to live worker processes that serve the job's queue, at the address they wrote in the workers
table: to SKIPQUEUE_WAKEUP_FANOUT of them, taken in turn, so that one enqueue does not send a
claim query from every worker of a large fleet (all but one would find nothing). A worker
waiting between idle polls wakes up and claims at once; a busy one claims when a thread frees
up. Nothing depends on it: a lost datagram only means the job waits for the next poll (at most
SKIPQUEUE_IDLE_POLL_SECONDS per queue), and a datagram nobody needs costs one claim query.

Other long-running processes an app adds (a relay) are woken the same way, through this
module's public API: :func:`when_committed` to send after the commit, :func:`cached` for the
addresses of the live ones (``ProcessRecord``'s ``answering()``), :func:`send` for the datagram.

Worker side: :class:`Waker` is the one place a worker's main loop sleeps. It returns early on a
datagram, or on a local "poke" (a job finished, a signal arrived).

Datagrams are unauthenticated: once a worker listens beyond loopback, anyone who reaches its
port can send them. So a worker reads them at most SKIPQUEUE_WAKEUP_MAX_RATE times a second on
average, a fifth of a second's worth at once (those that arrive while the budget is spent wait
in the socket's buffer, and are read together, or dropped by the kernel when it is full), which
bounds the claim queries and the wake-ups a flood can cause; and it ignores a datagram that is
not a comma-separated list of queue names.

Stopping: the signals a worker or a supervisor obeys wake the same sleep. SIGTERM and SIGINT
ask for a graceful stop; a second one, or SIGQUIT, for an immediate one. :class:`Stopping`'s
handlers only note the signal and poke the Waker; the main loop acts on it between two steps.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import re
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from types import FrameType
from typing import Any

from django.db import transaction

from django_skipqueue.conf import get_settings
from django_skipqueue.models import WorkerProcess
from django_skipqueue.models.worker import WorkerRole

logger = logging.getLogger(__name__)

#: Seconds a producer process reuses its list of worker addresses.
ADDRESS_CACHE_SECONDS = 2.0
#: A wake-up address: host and UDP port.
Address = tuple[str, int]

#: By database alias and kind of process: when the list expires (monotonic), and the list.
_addresses: dict[tuple[str, str], tuple[float, Any]] = {}
_socket_lock = threading.Lock()
_socket: socket.socket | None = None
#: Where the next fan-out starts in the list of live workers: each enqueue wakes the next few.
_turn = itertools.count()
#: A well-formed datagram: queue names (backend.QUEUE_NAME_PATTERN) separated by commas.
_NAME = rb"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}"
DATAGRAM_PATTERN = re.compile(rb"%s(?:,%s)*" % (_NAME, _NAME))
#: Longest datagram read; a longer one is truncated, so malformed.
MAX_DATAGRAM = 512
#: Seconds between two log lines about ignored datagrams.
IGNORED_LOG_SECONDS = 60.0
#: Reads of the datagram socket a Waker may make back to back: this many seconds of its rate.
#: A fixed gap after each read made a job enqueued within 1 / rate of the last wait out the
#: gap (p50 9.6 ms, p99 21 ms from commit to start at 50 jobs a second on two processes).
READ_BURST_SECONDS = 0.2


def after_commit(using: str, queues: Iterable[str]) -> None:
    """Wake idle workers of ``queues`` once the current transaction on ``using`` commits.

    Called wherever jobs become ready: enqueue, promotion of due jobs, the reaper, a worker's
    immediate retry or release, the admin's retry. Workers that hear wake-ups rely on them
    and poll an emptied queue only at the idle cap.
    """
    queues = frozenset(queues)
    if queues:
        when_committed(using, partial(notify, using, queues))


def when_committed(using: str, wake: Callable[[], object]) -> None:
    """Call ``wake`` once the current transaction on ``using`` commits (SKIPQUEUE_WAKEUP on).

    ``robust``: a wake-up that raises must not fail the commit's other callbacks.
    """
    if get_settings().WAKEUP:
        transaction.on_commit(wake, using=using, robust=True)


def notify(using: str, queues: frozenset[str]) -> int:
    """Send a wake-up datagram to live workers of ``queues``; return how many were sent.

    Never raises: the producer's request must not fail because a worker is unreachable.
    """
    try:
        payload = ",".join(sorted(queues)).encode()
        # A worker that serves every queue has none listed.
        serving = [a for a, served in _live_workers(using) if served & queues or not served]
        chosen = in_turn(serving, get_settings().WAKEUP_FANOUT, next(_turn))
        return send(payload, chosen)
    except Exception:
        logger.debug("wake-up not sent", exc_info=True)
        return 0


def in_turn[T](items: list[T], fanout: int | None, turn: int) -> list[T]:
    """Return ``fanout`` of ``items`` (all of them for None), the ``turn``-th group in rotation.

    Successive turns walk round the list, so every worker gets its share of wake-ups and one
    that is busy (or just died) is not chosen every time.
    """
    if fanout is None or fanout >= len(items):
        return list(items)
    start = (turn * fanout) % len(items)
    return [items[(start + offset) % len(items)] for offset in range(fanout)]


def forget_addresses() -> None:
    """Drop the cached addresses of every kind (tests, or after processes changed)."""
    _addresses.clear()


def cached[T](using: str, kind: str, load: Callable[[], list[T]]) -> list[T]:
    """Return what ``load`` read of the live processes of ``kind`` on ``using``, read again
    at most every ADDRESS_CACHE_SECONDS: a producer must not read a table per commit."""
    now = time.monotonic()
    entry = _addresses.get((using, kind))
    if entry is not None and entry[0] > now:
        return entry[1]
    rows = load()
    _addresses[(using, kind)] = (now + ADDRESS_CACHE_SECONDS, rows)
    return rows


def send(payload: bytes, addresses: Iterable[Address]) -> int:
    """Send ``payload`` to each of ``addresses``, best effort; return how many were tried."""
    tried = 0
    for address in addresses:
        _send(payload, address)
        tried += 1
    return tried


def _live_workers(using: str) -> list[tuple[Address, frozenset[str]]]:
    def load() -> list[tuple[Address, frozenset[str]]]:
        rows = (
            WorkerProcess.objects.using(using)
            .filter(role=WorkerRole.WORKER)
            .answering()
            .order_by("pk")  # a stable order for the rotation of in_turn()
            .values_list("wakeup_address", "queues")
        )
        return [(parse_address(str(address)), frozenset(queues)) for address, queues in rows]

    return cached(using, "workers", load)


def _send(payload: bytes, address: Address) -> None:
    global _socket
    with _socket_lock:
        if _socket is None:
            _socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            _socket.setblocking(False)
        try:
            _socket.sendto(payload, address)
        except OSError:
            logger.debug("wake-up to %s:%s failed", *address, exc_info=True)


@atexit.register
def close_socket() -> None:
    """Close the producer's datagram socket (at exit); the next wake-up opens another."""
    global _socket
    with _socket_lock:
        if _socket is not None:
            _socket.close()
            _socket = None


def parse_address(text: str) -> Address:
    """Read a ``host:port`` the process table holds."""
    host, _, port = text.rpartition(":")
    return host, int(port)


class Waker:
    """Sleep until a timeout, a local poke, or (when listening) a wake-up datagram.

    ``max_rate``: read datagrams at most this many times a second on average, up to
    READ_BURST_SECONDS of that rate back to back (a token bucket; None: whenever they come).
    ``names_only``: ignore datagrams that are not queue names (the outbox relay's are not).
    """

    def __init__(
        self, host: str | None, *, max_rate: float | None = None, names_only: bool = False
    ) -> None:
        self._inbox, self._doorbell = socket.socketpair()
        self._rate = max_rate or 0.0
        self._burst = max(1.0, self._rate * READ_BURST_SECONDS)
        #: Reads allowed now (whole ones), as of ``_reads_counted_at`` (monotonic).
        self._reads_left = self._burst
        self._reads_counted_at = time.monotonic()
        self._names_only = names_only
        #: Datagrams read, and those ignored as malformed (for the worker's log).
        self.datagrams = self.ignored = 0
        self._ignored_logged_at = float("-inf")
        self._ignored_since_log = 0
        #: In wait() (or about to select): only then does :meth:`nudge` need to ring.
        self._asleep = False
        for end in (self._inbox, self._doorbell):
            end.setblocking(False)
        self.udp: socket.socket | None = None
        if host:
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind((host, 0))
            self.udp.setblocking(False)

    @property
    def address(self) -> str | None:
        """Return ``host:port`` to advertise in the workers table, or None."""
        if self.udp is None:
            return None
        host, port = self.udp.getsockname()[:2]
        return f"{host}:{port}"

    def poke(self) -> None:
        """Wake the sleeper (safe from other threads and from signal handlers)."""
        with contextlib.suppress(OSError):  # a full buffer: a wake-up is already pending
            self._doorbell.send(b"\0")

    def nudge(self) -> None:
        """Wake the sleeper if it sleeps: for job threads, after they handed over an outcome.

        A busy loop needs no poke: it looks for outcomes (``wait(ready=...)``) before it
        selects. That saves a system call and a thread switch for most finished jobs. The flag
        and the outcome queue are read and written under the GIL, so either this thread sees
        the sleeper's flag, or the sleeper sees this thread's outcome.
        """
        if self._asleep:
            self.poke()

    def wait(
        self, timeout: float, *, listen: bool, ready: Callable[[], bool] | None = None
    ) -> set[str]:
        """Sleep up to ``timeout`` seconds, not at all if ``ready()`` says there is work.

        Return the queue names datagrams asked for.
        """
        sources = [self._inbox]
        if listen and self.udp is not None:
            deaf_for = self._deaf_for()
            if deaf_for <= 0:
                sources.append(self.udp)
            else:  # the reads of this second are spent: listen again when one is allowed
                timeout = min(timeout, deaf_for)
        self._asleep = True
        try:
            if ready is not None and ready():
                timeout = 0.0
            readable, _, _ = select.select(sources, [], [], max(timeout, 0.0))
        finally:
            self._asleep = False
        _drain(self._inbox)
        return self.drain_datagrams() if self.udp in readable else set()

    def drain_datagrams(self) -> set[str]:
        """Empty the datagram queue (while busy, so no stale wake-up lingers); return queues."""
        queues: set[str] = set()
        sender = None
        while self.udp is not None:
            try:
                payload, sender = self.udp.recvfrom(MAX_DATAGRAM + 1)
            except OSError:
                break
            self.datagrams += 1
            if self._names_only and not DATAGRAM_PATTERN.fullmatch(payload):
                self.ignored += 1
                self._ignored_since_log += 1
                continue
            queues.update(payload.decode(errors="replace").split(","))
        if self._rate and sender is not None:  # a read that found nothing counts for nothing
            self._count_reads()
            self._reads_left -= 1
        if self._ignored_since_log:
            self._log_ignored(sender)
        return queues

    def _deaf_for(self) -> float:
        """Seconds until the datagram socket may be read again (0 or less: now)."""
        if not self._rate:
            return 0.0
        self._count_reads()
        return (1.0 - self._reads_left) / self._rate

    def _count_reads(self) -> None:
        """Give back the reads the time since the last count allows, up to the burst."""
        now = time.monotonic()
        elapsed = now - self._reads_counted_at
        self._reads_left = min(self._burst, self._reads_left + elapsed * self._rate)
        self._reads_counted_at = now

    def _log_ignored(self, sender: object) -> None:
        """One line a minute at most, whatever the flood: how many, and the last sender."""
        now = time.monotonic()
        if now - self._ignored_logged_at < IGNORED_LOG_SECONDS:
            return
        logger.warning(
            "wake-up datagrams ignored (not queue names) count=%s last_from=%s address=%s",
            self._ignored_since_log,
            sender,
            self.address,
        )
        self._ignored_logged_at, self._ignored_since_log = now, 0

    def close(self) -> None:
        for end in (self._inbox, self._doorbell, self.udp):
            if end is not None:
                end.close()


def _drain(end: socket.socket) -> None:
    try:
        while end.recv(4096):
            pass
    except OSError:
        pass


# Stopping: the signals that end the sleep for good.

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
