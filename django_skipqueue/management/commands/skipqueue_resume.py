"""manage.py skipqueue_resume: let workers claim from paused queues again."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_skipqueue.compat import InvalidTask
from django_skipqueue.management.arguments import add_backend
from django_skipqueue.queues import resume


class Command(BaseCommand):
    help = "Resume paused queues: workers claim from them again within about a second."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("queues", nargs="+", metavar="QUEUE", help="Queue names to resume.")
        add_backend(parser, "Task backend of the queues")

    def handle(self, *args: Any, **options: Any) -> None:
        for name in options["queues"]:
            try:
                resumed = resume(name, backend=options["backend"])
            except (InvalidTask, ValueError) as error:
                raise CommandError(str(error)) from error
            self.stdout.write(f"resumed {name}" if resumed else f"{name} was not paused")
