"""Round trips: statements sent before the previous answer is read, where the driver allows.

Each statement waits for the server's answer: over a link with a 20 ms round trip, a claim of
six statements costs 120 ms whatever the server does. Two ways to send fewer waits, where the
client library can (mysqlclient on MariaDB Connector/C or libmysqlclient, which send a
statement before the answer to the previous one is read):

- START TRANSACTION is not sent when a short transaction begins but with its first statement,
  in one round trip (``transactions.short_transaction``; the transaction is the same: InnoDB
  takes its first snapshot at the first read either way). A statement Django sends itself
  (the ORM, a savepoint) sends it first.
- :func:`run_together` sends statements that do not depend on each other's answers (the
  claim's UPDATE and the read of the rows it marked) in one round trip, then reads every
  answer in order. If one fails, the others' answers are still read (the connection stays in
  step) and the first error is raised; the caller's transaction then rolls back as before.
  Statements after a failed one still ran, so only statements whose effects the rollback
  undoes are sent together, never a COMMIT.

Elsewhere (PostgreSQL, SQLite, another MySQL driver) the same statements run one by one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import connections

#: Per thread: the compiled statements (statements.py) and the measured round trips.
_local = threading.local()


class Compiled(Protocol):
    """A compiled statement (``statements.Statement``): its SQL and its parameters."""

    @property
    def sql(self) -> str: ...

    def bind(self, values: Sequence[Any]) -> list[Any]: ...


class Pending(Protocol):
    """What a short transaction has not sent yet (``transactions._Pending``)."""

    deferred: list[Deferred]

    def take(self) -> list[str | Deferred]: ...

    def flush(self, *, begin: bool = False) -> None: ...


def can_pipeline(connection: Any) -> bool:
    """Tell whether ``connection`` (connected) can send statements before reading answers."""
    if connection.vendor != "mysql":
        return False
    raw = connection.connection
    return hasattr(raw, "send_query") and hasattr(raw, "read_query_result")


@dataclass(slots=True)
class Deferred:
    """A compiled statement that goes out with the transaction's next round trip.

    ``result()`` returns its answer (its rows, or the rows an UPDATE matched); asked before
    the statement went out, it sends it at once.
    """

    run: Run
    connection: Any
    answer: Any = None
    error: BaseException | None = None
    sent: bool = False

    def result(self) -> Any:
        if not self.sent:
            pending: Pending | None = getattr(self.connection, "skipqueue_pending", None)
            assert pending is not None, "a deferred statement outlived its transaction"
            pending.flush()
        if self.error is not None:
            with self.connection.wrap_database_errors:
                raise self.error
        return self.answer


@dataclass(frozen=True, slots=True)
class Run:
    """One compiled statement to run with ``values``: its rows if ``rows``, else its count."""

    statement: Compiled
    values: Sequence[Any]
    rows: bool = False


def run_together(using: str, runs: Sequence[Run]) -> list[Any]:
    """Run compiled statements in order, in one round trip where the driver allows.

    Returns, per statement, its rows (a list of tuples) or the rows an UPDATE matched. Send
    together only statements whose parameters do not depend on each other's answers; what
    the transaction has pending (its START TRANSACTION, deferred statements: see
    :func:`short_transaction` and :func:`defer`) goes out ahead of them.
    """
    connection = connections[using]
    connection.ensure_connection()
    pending: Pending | None = getattr(connection, "skipqueue_pending", None)
    if not can_pipeline(connection) or (pending is None and len(runs) == 1):
        return [_run_one(connection, run) for run in runs]
    ahead = pending.take() if pending is not None else []
    answers = send_pipelined(connection, [*ahead, *runs])
    return answers[len(ahead) :]


def defer(using: str, run: Run) -> Deferred:
    """Queue ``run`` to go out with the transaction's next round trip; see :class:`Deferred`.

    Inside a :func:`short_transaction` on a driver that pipelines: an UPDATE whose answer the
    caller can wait for (a batch of completions, sent with the claim's locking read). Elsewhere
    the statement runs at once.
    """
    connection = connections[using]
    pending: Pending | None = getattr(connection, "skipqueue_pending", None)
    deferred = Deferred(run, connection)
    if pending is None:
        deferred.answer, deferred.sent = _run_one(connection, run), True
    else:
        pending.deferred.append(deferred)
    return deferred


def _run_one(connection: Any, run: Run) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(run.statement.sql, run.statement.bind(run.values))
        return list(cursor.fetchall()) if run.rows else cursor.rowcount


def send_pipelined(connection: Any, items: Sequence[str | Run | Deferred]) -> list[Any]:
    """Send ``items`` without waiting, then read every answer in order; return the answers.

    A plain string is a statement without parameters whose answer nobody needs (None in the
    answers); a deferred statement gets its answer (or its error) as well.
    """
    raw = connection.connection
    with connection.wrap_database_errors:
        cursor = raw.cursor()
        try:
            texts = [_text(cursor, item) for item in items]
        finally:
            cursor.close()
        payloads = [text.encode(raw.encoding) for text in texts]
        _refuse_too_large(connection, raw, payloads)
        began = time.monotonic()
        for payload in payloads:
            raw.send_query(payload)
        for item in items:
            if isinstance(item, Deferred):
                item.sent = True
        answers, error = _read_answers(connection, items, began)
        _log_queries(connection, texts, began)
        if error is not None:
            raise error
    return answers


def _read_answers(
    connection: Any, items: Sequence[str | Run | Deferred], began: float
) -> tuple[list[Any], BaseException | None]:
    """Read the answer of every item sent, in order; a deferred item keeps its own.

    Returns the answers and the first error the server answered with (the later answers are
    still read: the connection stays in step). An error that leaves nothing to read (the
    connection broke) is raised at once.
    """
    raw = connection.connection
    answered = False
    answers: list[Any] = []
    error: BaseException | None = None
    for item in items:
        answer: Any = None
        try:
            raw.read_query_result()
            if not answered:
                answered = True
                _note_round_trip(connection.alias, time.monotonic() - began)
            result = raw.store_result()
            run = item.run if isinstance(item, Deferred) else item
            if isinstance(run, Run):
                rows = run.rows
                answer = (list(result.fetch_row(0)) if result else []) if rows else None
                answer = raw.affected_rows() if not rows else answer
        except raw.Error as failed:
            if not _answered(failed):
                if error is not None:  # an answer (1153: too large) ended the connection
                    raise error from failed
                raise  # the connection is broken: nothing more to read
            error = error or failed
            if isinstance(item, Deferred):
                item.error = failed
        if isinstance(item, Deferred):
            item.answer = answer
        answers.append(answer)
    return answers, error


#: The client library's error of a packet larger than max_allowed_packet (CR_NET_PACKET_TOO_LARGE).
PACKET_TOO_LARGE = 2020


def _refuse_too_large(connection: Any, raw: Any, payloads: Sequence[bytes]) -> None:
    """Refuse, before sending anything, a statement larger than the server's packet limit.

    The server would answer it by closing the connection, and the client would see a server
    that went away (2006) for what is a statement too large: the worker took that for an
    outage and sent the same batch again forever. ``skipqueue_max_packet`` is the session's
    max_allowed_packet, set where it was read (worker/heartbeat.py, through db/packets.py);
    not set, nothing is checked.
    """
    limit = getattr(connection, "skipqueue_max_packet", None)
    if limit is None:
        return
    for payload in payloads:
        if len(payload) >= limit:  # the packet is the statement and one byte more
            raise raw.OperationalError(
                PACKET_TOO_LARGE,
                f"A statement of {len(payload):,} bytes is larger than the server's "
                f"max_allowed_packet ({limit:,}); nothing was sent.",
            )


#: Round trips kept per thread and database alias to estimate the link's round-trip time.
ROUND_TRIPS_KEPT = 32


def round_trip(using: str) -> float | None:
    """The round-trip time to ``using``'s server, in seconds, as this thread measured it.

    The shortest of the last ROUND_TRIPS_KEPT pipelined sends until their first answer: the
    shortest is the one the server and the machine's load delayed least, so it is the link's
    share. None before any (or where statements are not pipelined).
    """
    kept = _local.__dict__.get("round_trips", {}).get(using)
    return min(kept) if kept else None


def _note_round_trip(using: str, seconds: float) -> None:
    trips: dict[str, deque[float]] = _local.__dict__.setdefault("round_trips", {})
    kept = trips.get(using)
    if kept is None:
        kept = trips[using] = deque(maxlen=ROUND_TRIPS_KEPT)
    kept.append(seconds)


def _text(cursor: Any, item: str | Run | Deferred) -> str:
    if isinstance(item, str):
        return item
    run = item.run if isinstance(item, Deferred) else item
    return str(cursor.mogrify(run.statement.sql, run.statement.bind(run.values)))


def _log_queries(connection: Any, texts: Sequence[str], began: float) -> None:
    """Add statements sent outside Django's cursor to its query log, when it keeps one."""
    if connection.queries_logged:
        seconds = f"{(time.monotonic() - began) / max(len(texts), 1):.3f}"
        for text in texts:
            connection.queries_log.append({"sql": text, "time": seconds})


def _answered(error: BaseException) -> bool:
    """Tell whether the server answered with this error (the next answers can still be read).

    Client errors (2000 to 2999: lost connection, timeouts, out of sync) leave nothing to read.
    """
    code = error.args[0] if error.args else 0
    return not (isinstance(code, int) and 2000 <= code < 3000)
