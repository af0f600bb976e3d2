"""What the package's commands do when their database cannot be used: one line, not a traceback.

Django's system checks run before a command's ``handle()`` and connect to a MySQL/MariaDB
server (to read its version): a server that is down or refuses the credentials then ended the
command with a traceback of a hundred lines. A one-shot command says why in one sentence and
exits with status 1; a loop waits for the server, as ``runworkers`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError
from django.db import Error, connections

from django_skipqueue.db.outage import explain
from django_skipqueue.worker.startup import wait_for_database


@contextmanager
def explained(using: str) -> Iterator[None]:
    """Connect to ``using`` and run the block; a database error ends it as a CommandError
    saying in one line why the database cannot be used (unreachable, credentials refused)."""
    try:
        connections[using].ensure_connection()
        yield
    except Error as error:
        raise CommandError(explain(using, error)) from error


def wait_or_explain(using: str) -> None:
    """Wait for ``using`` to answer (outage lines meanwhile); refused credentials end the wait
    with a CommandError (waiting cannot fix them)."""
    try:
        wait_for_database(using, give_up_if_denied=True)
    except Error as error:
        raise CommandError(explain(using, error)) from error
