"""``manage.py runworkers``: check the options, then hand over to the Supervisor.

The system checks run once the queue's database answers, not before: Django's own checks
connect to read the server's version, and a worker must outlive a database that is down when
it starts, as it outlives one that goes away later.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import TYPE_CHECKING, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_skipqueue.backend import QUEUE_NAME_PATTERN, SkipQueueBackend
from django_skipqueue.conf import get_settings
from django_skipqueue.db.outage import is_access_denied, outage
from django_skipqueue.db.packets import byte_limits_problem
from django_skipqueue.extensions import SideProcess, extensions
from django_skipqueue.management.arguments import (
    add_backend,
    backend_named,
    int_between,
    non_negative_float,
    positive_float,
    positive_int,
    prefetch_count,
    queue_list,
)
from django_skipqueue.management.daemons import database_ready
from django_skipqueue.worker.heartbeat import bound_network_waits
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from django_skipqueue.worker.startup import (
    pool_size,
    unapplied_migrations,
    wait_for_database,
)
from django_skipqueue.worker.supervisor import Supervisor, default_maintenance

if TYPE_CHECKING:
    from django_skipqueue.monitoring.exporter import Endpoint

LOG_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


class Command(BaseCommand):
    help = (
        "Run worker processes that claim jobs of a django-skipqueue task backend and run them. "
        "SIGTERM/SIGINT stop gracefully; a second signal or SIGQUIT stops at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add = parser.add_argument
        add(
            "--processes",
            type=positive_int,
            default=1,
            help="Worker processes to fork (default: %(default)r).",
        )
        add(
            "--threads",
            type=positive_int,
            default=4,
            help="Jobs each process runs at a time (default: %(default)r).",
        )
        add(
            "--queues",
            type=queue_list,
            default=None,
            help="Comma-separated queues to claim from, in this order "
            "(default: the backend's QUEUES, in settings order).",
        )
        add_backend(parser, "Alias of the task backend in TASKS")
        add(
            "--burst",
            action="store_true",
            help="Exit once no job is ready (jobs scheduled for later stay).",
        )
        add(
            "--max-jobs",
            type=positive_int,
            default=None,
            help="Replace a worker process after it started this many jobs.",
        )
        add(
            "--max-memory",
            type=positive_int,
            default=None,
            metavar="MIB",
            help="Replace a worker process using more than MIB MiB of memory.",
        )
        add(
            "--grace",
            type=non_negative_float,
            default=25.0,
            help="Seconds jobs get to finish after SIGTERM (default: %(default)r).",
        )
        add(
            "--lease",
            type=positive_float,
            default=None,
            help="Lease length in seconds for every claim (default: each job's own).",
        )
        add(
            "--poll-max",
            type=positive_float,
            default=None,
            help="Longest idle pause per queue between claims, in seconds "
            "(default: SKIPQUEUE_IDLE_POLL_SECONDS).",
        )
        add(
            "--prefetch",
            type=prefetch_count,
            default=None,
            metavar="N",
            help="Jobs each process claims beyond its free threads, or auto "
            "(default: SKIPQUEUE_PREFETCH, auto unless set; 0 turns it off).",
        )
        add(
            "--no-wakeup",
            action="store_true",
            help="Do not listen for wake-up datagrams; rely on polling alone.",
        )
        add(
            "--force",
            action="store_true",
            help="Start even with more processes than the machine's cores or the server's "
            "max_connections can take (a warning instead of an error).",
        )
        add(
            "--metrics-port",
            type=int_between(1, 65535, "port"),
            default=None,
            metavar="PORT",
            help="Serve the worker processes' Prometheus metrics on PORT (off by default; "
            "needs prometheus-client).",
        )
        add(
            "--metrics-host",
            default="127.0.0.1",
            metavar="HOST",
            help="Address the metrics port listens on (default: %(default)r, this host only).",
        )
        for extension in extensions():  # the installed apps' options (--relay)
            extension.runworkers_arguments(parser)

    def execute(self, *args: Any, **options: Any) -> Any:
        """Wait for the queue's database, then run the system checks and the command.

        ``--burst`` is a run that must end: like every daemon's one-shot run it tries the
        database once, within SKIPQUEUE_DATABASE_TIMEOUT, and says in one line why it cannot
        use it (exit 1) instead of waiting.
        """
        self._configure_logging(options["verbosity"])
        using = backend_named(options["backend"]).database
        if options["burst"]:
            bound_network_waits(using)  # the supervisor's connection: see worker.heartbeat
            try:
                database_ready(using, once=True)
            except CommandError as failure:
                # Refused credentials are logged as every worker logs them (who, where, the
                # fix), for the log collector; an unreachable server is the one line below.
                if failure.__cause__ is not None and is_access_denied(failure.__cause__):
                    outage(using).failed(failure.__cause__)
                raise
        else:
            wait_for_database(using)
        return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        side = self._side_processes(options)
        worker_options = self._worker_options(options)
        self._check_migrated(worker_options.database)
        self._check_pool(options, worker_options.database)
        if problem := byte_limits_problem(worker_options.database):
            logging.getLogger("django_skipqueue.supervisor").warning("%s", problem)
        endpoint = self._metrics_endpoint(options["metrics_port"], options["metrics_host"])
        owner = owner_id()
        supervisor = Supervisor(
            worker_options,
            processes=options["processes"],
            maintenance=default_maintenance(worker_options.database, owner),
            owner=owner,
            side=side,
            metrics_endpoint=endpoint,
        )
        code = supervisor.run()
        if code:
            sys.exit(code)

    def _metrics_endpoint(self, port: int | None, host: str) -> Endpoint | None:
        """The run's Prometheus endpoint, or None without --metrics-port."""
        if port is None:
            return None
        try:
            from django_skipqueue.monitoring.exporter import Endpoint
        except ImportError as error:
            raise CommandError(
                f"--metrics-port needs prometheus-client ({error}): "
                "pip install 'django-skipqueue[prometheus]'."
            ) from error
        _port_free(host, port)
        return Endpoint(port, host)

    def _side_processes(self, options: dict[str, Any]) -> list[SideProcess]:
        """The processes the installed apps run next to the workers (``--relay``'s relay)."""
        return [side for extension in extensions() for side in extension.side_processes(options)]

    def _worker_options(self, options: dict[str, Any]) -> WorkerOptions:
        backend = backend_named(options["backend"])
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
            prefetch=_prefetch(options["prefetch"]),
        )

    def _check_queues(self, queues: list[str], backend: SkipQueueBackend, alias: str) -> None:
        """Refuse queues the backend would not accept: any valid name when its QUEUES is []."""
        if backend.queue_names:
            unknown = [name for name in queues if name not in backend.queue_names]
            known = f"its QUEUES are {', '.join(backend.queue_names)}"
        else:
            unknown = [name for name in queues if not QUEUE_NAME_PATTERN.fullmatch(name)]
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

    def _configure_logging(self, verbosity: int) -> None:
        """Make sure the banner, job lines and summary are seen when logging is not set up."""
        logger = logging.getLogger("django_skipqueue")
        if logger.hasHandlers():
            return
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(LOG_LEVELS.get(verbosity, logging.INFO))


def _prefetch(option: int | str | None) -> int | None:
    """``--prefetch``: a number, ``auto`` (None: adaptive), or not given (the setting)."""
    if option is None:
        return get_settings().PREFETCH
    return None if option == "auto" else int(option)


def _port_free(host: str, port: int) -> None:
    """Refuse a metrics port another process holds before any worker starts."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as error:
        raise CommandError(f"--metrics-port: cannot listen on {host}:{port} ({error}).") from error
