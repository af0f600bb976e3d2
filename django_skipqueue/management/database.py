"""What the package's commands do when their database cannot be used: one line, not a traceback.

Django's system checks run before a command's ``handle()`` and connect to a MySQL/MariaDB
server (to read its version): a server that is down or refuses the credentials then ended the
command with a traceback of a hundred lines. A one-shot command says why in one sentence and
exits with status 1; a loop waits for the server, as ``runworkers`` does. A database that
lacks migrations ends a daemon's start in one line too (:func:`require_migrated`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError
from django.db import Error, connections

from django_skipqueue.db.migrated import describe, installed_labels, label_of, unapplied
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


def require_migrated(using: str, *apps: str) -> None:
    """End a daemon's start in one line when ``using`` lacks migrations of ``apps`` (names in
    INSTALLED_APPS; none: every installed app of the package). Call it once, after the
    database answers and before the loop: waiting cannot create a table."""
    labels = [label_of(name) for name in apps] if apps else installed_labels()
    missing = unapplied(using, labels)
    if missing:
        raise CommandError(describe(using, missing))
