"""Log a database outage as a few lines: when it starts, a summary now and then, when it ends.

Every loop of a process (worker, supervisor, maintenance) retries its database work about once
a second while the server is away. Logging each failure buried the logs under thousands of
identical tracebacks, so each process keeps one :class:`Outage` per database alias and every
loop reports to it.
"""

from __future__ import annotations

import logging
import os
import time

from django.db import InterfaceError, OperationalError, connections

from django_skipqueue.db.statements import is_retryable

logger = logging.getLogger("django_skipqueue.database")

#: Seconds between two "still unreachable" lines while an outage lasts.
SUMMARY_SECONDS = 60.0
#: Error codes of a server that refuses a connection because it holds too many already
#: (max_connections, max_user_connections, or the account's MAX_USER_CONNECTIONS).
TOO_MANY_CONNECTIONS = (1040, 1203, 1226)
#: What the first line adds for them: the server is up, the budget is spent.
TOO_MANY_HINT = (
    " cause=max_connections: the server refuses more connections; lower --processes or "
    "--threads, release job connections (SKIPQUEUE_RELEASE_JOB_CONNECTIONS) or raise it "
    "(docs/howto/run-workers.md)"
)
#: Error codes of a statement larger than max_allowed_packet: 1153 from the server (which then
#: drops the connection), 2020 from the client library. Neither says anything of the server's
#: health: they belong to the rows the statement carried (see worker/recording.py).
PACKET_TOO_LARGE = frozenset({1153, 2020})
#: Error codes of a server that refuses the credentials: access denied for the user (1045),
#: to the database (1044), or without a password where one is needed (1698); PostgreSQL's
#: SQLSTATEs of a wrong password and of a role not allowed to connect. Waiting cannot fix
#: them (someone must), and the server is up: they are said once, not as an outage.
ACCESS_DENIED = frozenset({1044, 1045, 1698})
ACCESS_DENIED_SQLSTATES = frozenset({"28P01", "28000"})


class Outage:
    """The state of one database seen from one process: reachable, or down since when."""

    def __init__(self, using: str) -> None:
        self.using = using
        self.down_since: float | None = None
        self.failures = 0
        self.error = ""
        self.next_summary_at = 0.0
        self.traceback_logged = False
        #: The error of the last outage whose start was logged, and until when an outage
        #: like it goes unlogged (see :meth:`failed`).
        self.logged_error = ""
        self.quiet_until = 0.0
        #: The current outage was not logged; outages left unlogged since the last line.
        self.quiet = False
        self.unlogged = 0

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, error: BaseException) -> None:
        """Count a failure; log only when the outage starts, changes error, or lasts.

        A server at its connection limit refuses one connection now and then rather than all
        of them for a while: each refusal is then an outage of one failure, ended by the next
        attempt. Such a refusal, with the same error as the last outage logged and within
        SUMMARY_SECONDS of that line, is counted but not logged (nor is its end); the next line
        says how many there were. So a server at its limit costs a process a line a minute.
        Every other outage (a server down, a connection lost) is logged as it starts.
        """
        now = time.monotonic()
        text = describe(error)
        self.failures += 1
        denied = is_access_denied(error)
        if self.down_since is None:
            self.down_since = now
            self.failures = 1
            if _too_many(error) and text == self.logged_error and now < self.quiet_until:
                self.quiet = True
                self.unlogged += 1
                self.error = text
                self.next_summary_at = self.quiet_until
                return
            self._log_start(error, text)
        elif text != self.error:
            if denied:
                self._log_denied(text)
            else:
                logger.warning(
                    "database still unreachable database=%s error=%s pid=%s",
                    self.using,
                    text,
                    os.getpid(),
                )
        elif now >= self.next_summary_at:
            logger.warning(
                "database still %s database=%s for_s=%.0f failures=%s error=%s pid=%s",
                "refuses the credentials" if denied else "unreachable",
                self.using,
                now - self.down_since,
                self.failures,
                text,
                os.getpid(),
            )
        else:
            return
        self.error = text
        self.next_summary_at = now + SUMMARY_SECONDS

    def recovered(self) -> None:
        """Log the end of an outage (once); nothing when the database was not down, or when
        the outage's start went unlogged (see :meth:`failed`)."""
        if self.down_since is None:
            return
        logger.log(
            logging.DEBUG if self.quiet else logging.INFO,
            "database reachable again database=%s after_s=%.1f failures=%s pid=%s",
            self.using,
            time.monotonic() - self.down_since,
            self.failures,
            os.getpid(),
        )
        self.down_since = None
        self.failures = 0
        self.error = ""
        self.quiet = False

    def _log_denied(self, text: str) -> None:
        """Say once that the server refuses the credentials: who, where, and that it waits."""
        logger.error(
            "database refused the credentials, retrying database=%s user=%s host=%s error=%s "
            "pid=%s fix=the USER and PASSWORD of DATABASES[%r], or the account's grants",
            self.using,
            *whom(self.using),
            text,
            os.getpid(),
            self.using,
        )

    def _log_start(self, error: BaseException, text: str) -> None:
        if is_access_denied(error):
            self._log_denied(text)
            self.logged_error = text
            return
        unlogged = f" unlogged_outages_before={self.unlogged}" if self.unlogged else ""
        logger.warning(
            "database unreachable, retrying database=%s error=%s pid=%s%s%s",
            self.using,
            text,
            os.getpid(),
            unlogged,
            TOO_MANY_HINT if _too_many(error) else "",
        )
        self.logged_error = text
        self.quiet_until = time.monotonic() + SUMMARY_SECONDS
        self.unlogged = 0
        if not self.traceback_logged:
            # The first one only, and below WARNING: for a refused or lost connection the
            # line above says everything; the traceback helps with anything stranger.
            logger.debug("database error traceback database=%s", self.using, exc_info=error)
            self.traceback_logged = True


def _too_many(error: BaseException) -> bool:
    """Tell whether the server refused a connection because it holds too many already."""
    return bool(error.args) and error.args[0] in TOO_MANY_CONNECTIONS


def is_access_denied(error: BaseException) -> bool:
    """Tell whether the server refused the credentials (see ACCESS_DENIED)."""
    for cause in (error, error.__cause__):
        args = getattr(cause, "args", ())
        if args and args[0] in ACCESS_DENIED:
            return True
        if getattr(cause, "sqlstate", None) in ACCESS_DENIED_SQLSTATES:
            return True
    return False


def whom(using: str) -> tuple[str, str]:
    """Return the user and the host (with its port) that ``using`` connects as and to.

    Never the password: these go into log lines and command errors.
    """
    config = connections.settings.get(using, {})
    host = str(config.get("HOST") or "localhost")
    port = config.get("PORT")
    return str(config.get("USER") or "(default)"), f"{host}:{port}" if port else host


def explain(using: str, error: BaseException) -> str:
    """Say in one sentence why database ``using`` cannot be used: credentials, or reach."""
    user, host = whom(using)
    if is_access_denied(error):
        return (
            f"The database {using!r} refused the credentials of user {user!r} at {host} "
            f"({describe(error)}): check the USER and PASSWORD of DATABASES[{using!r}] and "
            "the account's grants."
        )
    return f"The database {using!r} at {host} is unreachable ({describe(error)})."


def describe(error: BaseException) -> str:
    """Render an error as ``Class(args)`` on one line."""
    return repr(error).replace("\n", " ")


def is_unreachable(error: BaseException) -> bool:
    """Tell whether ``error`` means the server cannot be reached, as opposed to a bad query.

    Deadlocks and lock-wait timeouts are OperationalErrors too, but they are retried by the
    transaction that met them and say nothing about the server's health; nor does a statement
    too large for the server's max_allowed_packet (:func:`is_too_large`).
    """
    return (
        isinstance(error, OperationalError | InterfaceError)
        and not is_retryable(error)
        and not is_too_large(error)
    )


def is_too_large(error: BaseException) -> bool:
    """Tell whether ``error`` is a statement refused for its size (max_allowed_packet)."""
    for cause in (error, error.__cause__):
        args = getattr(cause, "args", ())
        if args and args[0] in PACKET_TOO_LARGE:
            return True
    return False


_outages: dict[tuple[int, str], Outage] = {}


def outage(using: str) -> Outage:
    """Return this process's Outage of database ``using`` (a forked child gets its own)."""
    key = (os.getpid(), using)
    found = _outages.get(key)
    if found is None:
        found = _outages[key] = Outage(using)
    return found
