"""``manage.py runworkers``: check the options, then hand over to the Supervisor.

The system checks run once the queue's database answers, not before: Django's own checks
connect to read the server's version, and a worker must outlive a database that is down when
it starts, as it outlives one that goes away later.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.tasks import task_backends
from django.tasks.exceptions import InvalidTaskBackend

from django_skipqueue.backend import QUEUE_NAME_PATTERN, SkipQueueBackend
from django_skipqueue.conf import get_settings
from django_skipqueue.options import WorkerOptions
from django_skipqueue.owner import owner_id
from django_skipqueue.startup import pool_size, unapplied_migrations, wait_for_database
from django_skipqueue.supervisor import Supervisor, default_maintenance

LOG_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


def positive_int(text: str) -> int:
    value = _number(int, text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(float, text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {value}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(float, text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _number[N: (int, float)](kind: type[N], text: str) -> N:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def queue_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one queue name")
    return names


class Command(BaseCommand):
    help = (
        "Run worker processes that claim jobs of a django-skipqueue task backend and run them. "
        "SIGTERM/SIGINT stop gracefully; a second signal or SIGQUIT stops at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add = parser.add_argument
        add("--processes", type=positive_int, default=1,
            help="Worker processes to fork (default: %(default)r).")  # fmt: skip
        add("--threads", type=positive_int, default=4,
            help="Jobs each process runs at a time (default: %(default)r).")  # fmt: skip
        add("--queues", type=queue_list, default=None,
            help="Comma-separated queues to claim from, in this order "
                 "(default: the backend's QUEUES, in settings order).")  # fmt: skip
        add("--backend", default="default",
            help="Alias of the task backend in TASKS (default: %(default)r).")  # fmt: skip
        add("--burst", action="store_true",
            help="Exit once no job is ready (jobs scheduled for later stay).")  # fmt: skip
        add("--max-jobs", type=positive_int, default=None,
            help="Replace a worker process after it started this many jobs.")  # fmt: skip
        add("--max-memory", type=positive_int, default=None, metavar="MIB",
            help="Replace a worker process using more than MIB MiB of memory.")  # fmt: skip
        add("--grace", type=non_negative_float, default=25.0,
            help="Seconds jobs get to finish after SIGTERM (default: %(default)r).")  # fmt: skip
        add("--lease", type=positive_float, default=None,
            help="Lease length in seconds for every claim (default: each job's own).")  # fmt: skip
        add("--poll-max", type=positive_float, default=None,
            help="Longest idle pause per queue between claims, in seconds "
                 "(default: SKIPQUEUE_IDLE_POLL_SECONDS).")  # fmt: skip
        add("--no-wakeup", action="store_true",
            help="Do not listen for wake-up datagrams; rely on polling alone.")  # fmt: skip
        add("--force", action="store_true",
            help="Start even with more processes than the machine's cores or the server's "
                 "max_connections can take (a warning instead of an error).")  # fmt: skip

    def execute(self, *args: Any, **options: Any) -> Any:
        """Wait for the queue's database, then run the system checks and the command."""
        self._configure_logging(options["verbosity"])
        wait_for_database(self._backend(options["backend"]).database)
        return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        worker_options = self._worker_options(options)
        self._check_migrated(worker_options.database)
        self._check_pool(options, worker_options.database)
        owner = owner_id()
        supervisor = Supervisor(
            worker_options,
            processes=options["processes"],
            maintenance=default_maintenance(worker_options.database, owner),
            owner=owner,
        )
        code = supervisor.run()
        if code:
            sys.exit(code)

    def _worker_options(self, options: dict[str, Any]) -> WorkerOptions:
        backend = self._backend(options["backend"])
        queues = options["queues"] or backend.queue_names
        self._check_queues(queues, backend, options["backend"])
        return WorkerOptions(
            backend=options["backend"],
            database=backend.database,
            queues=tuple(dict.fromkeys(queues)),
            threads=options["threads"],
            burst=options["burst"],
            max_jobs=options["max_jobs"],
            max_memory_mb=options["max_memory"],
            grace=options["grace"],
            lease=options["lease"],
            poll_max=options["poll_max"] or get_settings().IDLE_POLL_SECONDS,
            wakeup=not options["no_wakeup"],
        )

    def _check_queues(self, queues: list[str], backend: SkipQueueBackend, alias: str) -> None:
        """Refuse queues the backend would not accept: any valid name when its QUEUES is []."""
        if backend.queue_names:
            unknown = [name for name in queues if name not in backend.queue_names]
            known = f"its QUEUES are {', '.join(backend.queue_names)}"
        else:
            unknown = [name for name in queues if not QUEUE_NAME_PATTERN.match(name)]
            known = "its QUEUES are [] (any valid queue name)"
        if unknown:
            raise CommandError(
                f"Unknown queue(s) {', '.join(unknown)} for backend {alias!r}; {known}."
            )

    def _check_migrated(self, using: str) -> None:
        missing = unapplied_migrations(using)
        if missing:
            raise CommandError(
                f"The database {using!r} lacks {len(missing)} migration(s) of django-skipqueue "
                f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): "
                'run "python manage.py migrate" first.'
            )

    def _check_pool(self, options: dict[str, Any], using: str) -> None:
        problems = pool_size(options["processes"], options["threads"], using).problems()
        if problems and not options["force"]:
            raise CommandError("; ".join(problems) + ". Use fewer, or add --force.")
        for problem in problems:
            logging.getLogger("django_skipqueue.supervisor").warning("%s (--force)", problem)

    def _backend(self, alias: str) -> SkipQueueBackend:
        try:
            backend = task_backends[alias]
        except InvalidTaskBackend:
            raise CommandError(f"There is no task backend {alias!r} in TASKS.") from None
        if not isinstance(backend, SkipQueueBackend):
            raise CommandError(
                f"Task backend {alias!r} is a {type(backend).__name__}, not a SkipQueueBackend."
            )
        return backend

    def _configure_logging(self, verbosity: int) -> None:
        """Make sure the banner, job lines and summary are seen when logging is not set up."""
        logger = logging.getLogger("django_skipqueue")
        if logger.hasHandlers():
            return
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(LOG_LEVELS.get(verbosity, logging.INFO))
