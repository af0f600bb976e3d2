"""What the package's daemons share: log lines seen, a database waited for, a turn's outage told.

The relay, the scheduler and the expiry sweeper run under systemd or Kubernetes with
``Restart=always``: dying when the database is down at start means a restart loop, and a
traceback per failed turn buries the logs. Like ``runworkers``, a loop waits for its database
with one line when it goes away and one when it is back, and stops at once on SIGTERM or SIGINT
while it waits. A one-shot run (``--burst``, ``--once``, a single sweep) says in one line why
the database cannot be used and exits 1: cron runs it again.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
from collections.abc import Callable

from django.core.management.base import CommandError
from django.db import DatabaseError, Error, close_old_connections, connections

from django_skipqueue.db.outage import explain, is_access_denied, is_unreachable, outage
from django_skipqueue.management.database import explained
from django_skipqueue.management.interrupts import stop_requested
from django_skipqueue.worker.startup import MAX_WAIT_PAUSE

logger = logging.getLogger("django_skipqueue.daemon")

#: Log levels of ``--verbosity`` 0 to 3.
LOG_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


def show_logs(verbosity: int) -> None:
    """Send the package's log lines to stderr when the project's LOGGING does not place them.

    The outage lines are the daemon's only word while a dependency is down: they must be seen.
    """
    package = logging.getLogger("django_skipqueue")
    if package.hasHandlers():
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    package.addHandler(handler)
    package.setLevel(LOG_LEVELS.get(verbosity, logging.INFO))


def database_ready(using: str, *, once: bool) -> bool:
    """Make sure ``using`` answers before a daemon's checks and loop; False: stopped meanwhile.

    ``once``: a run that must end says in one line why the database cannot be used
    (CommandError, exit 1) instead of waiting. Otherwise wait, one line per state change,
    until it answers or SIGTERM/SIGINT comes; refused credentials end the wait (someone must
    fix them).
    """
    if once:
        with explained(using):
            return True
    with stop_requested() as stop:
        return _wait(using, stop)


def _wait(using: str, stop: threading.Event) -> bool:
    pause = 0.1
    connection = connections[using]
    while not stop.is_set():
        try:
            connection.ensure_connection()
        except Error as error:
            outage(using).failed(error)
            connection.close()
            if is_access_denied(error):
                raise CommandError(explain(using, error)) from error
            stop.wait(pause * random.uniform(0.5, 1))
            pause = min(MAX_WAIT_PAUSE, pause * 2)
            continue
        outage(using).recovered()
        return True
    logger.info("stopped while waiting for the database database=%s", using)
    return False


def turn[T](using: str, work: Callable[[], T], what: str) -> T | None:
    """Run one turn of a loop on ``using``; None if it failed.

    A database that cannot be reached is told by its Outage (a line when it goes, one when it
    comes back); another database error is one line per turn, without a traceback.
    """
    close_old_connections()
    try:
        done = work()
    except DatabaseError as error:
        connections[using].close()
        if is_unreachable(error):
            outage(using).failed(error)
        else:
            logger.warning("%s failed, retrying at the next turn error=%r", what, error)
        return None
    outage(using).recovered()
    return done
