"""manage.py skipqueue_pause: stop claims from queues; jobs already running finish."""

from __future__ import annotations

import getpass
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_skipqueue.compat import InvalidTask
from django_skipqueue.management.arguments import add_backend
from django_skipqueue.queues import pause


class Command(BaseCommand):
    help = (
        "Pause queues: workers stop claiming from them within about a second "
        "(SKIPQUEUE_PAUSE_CACHE_SECONDS); running jobs finish. Undo with skipqueue_resume."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("queues", nargs="+", metavar="QUEUE", help="Queue names to pause.")
        parser.add_argument("--reason", default="", help="Why, for whoever looks later.")
        add_backend(parser, "Task backend of the queues")

    def handle(self, *args: Any, **options: Any) -> None:
        for name in options["queues"]:
            try:
                new = pause(name, backend=options["backend"], reason=options["reason"], by=_who())
            except (InvalidTask, ValueError) as error:
                raise CommandError(str(error)) from error
            self.stdout.write(f"paused {name}" if new else f"{name} was already paused")


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
