"""What ``runworkers`` makes sure of before it forks: a reachable, migrated, big enough database.

A worker started while its database is down (a host boot, a failover, a Kubernetes pod that
comes up first) waits for it instead of dying: under systemd or Kubernetes dying means a
restart loop. Whatever cannot get better by waiting (missing tables, a pool far too big for the
machine or the server) stops the command at once with a sentence that says what to do.
"""

from __future__ import annotations

import logging
import os
import random
import time
from dataclasses import dataclass

from django.apps import apps
from django.db import Error, connections
from django.db.migrations.executor import MigrationExecutor

from django_skipqueue.db.outage import is_access_denied, outage

logger = logging.getLogger("django_skipqueue.supervisor")

#: Longest pause between two connection attempts while waiting for the database, in seconds.
MAX_WAIT_PAUSE = 5.0
#: More worker processes than this many per core only add context switches.
PROCESSES_PER_CORE = 4


def wait_for_database(using: str, *, give_up_if_denied: bool = False) -> float:
    """Connect to ``using``, retrying until the server answers; return the seconds waited.

    ``give_up_if_denied``: raise the error of a server that refuses the credentials rather
    than wait for someone to fix them (``runworkers --burst``: a run that must end).
    """
    began = time.monotonic()
    pause = 0.1
    connection = connections[using]
    while True:
        try:
            connection.ensure_connection()
            outage(using).recovered()
            return time.monotonic() - began
        except Error as error:
            outage(using).failed(error)
            connection.close()
            if give_up_if_denied and is_access_denied(error):
                raise
        time.sleep(pause * random.uniform(0.5, 1))
        pause = min(MAX_WAIT_PAUSE, pause * 2)


def queue_apps() -> list[str]:
    """Return the labels of this package's installed apps (the main one and its sub-apps)."""
    return [
        config.label
        for config in apps.get_app_configs()
        if config.name == "django_skipqueue" or config.name.startswith("django_skipqueue.")
    ]


def unapplied_migrations(using: str) -> list[str]:
    """Return the package's migrations not applied to ``using``, as ``app.name`` strings."""
    executor = MigrationExecutor(connections[using])
    labels = set(queue_apps())
    targets = [node for node in executor.loader.graph.leaf_nodes() if node[0] in labels]
    plan = executor.migration_plan(targets)
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


@dataclass(frozen=True)
class PoolSize:
    """How many processes and connections a ``runworkers`` asks for, against what there is."""

    processes: int
    threads: int
    cores: int
    max_connections: int | None

    @property
    def connections(self) -> int:
        """Connections at most: the supervisor's, and per process the loop's plus one per thread.

        Each thread that runs job code opens its own connection when a task uses the database.
        """
        return 1 + self.processes * (1 + self.threads)

    def problems(self) -> list[str]:
        """Return one sentence per limit this pool exceeds by far."""
        found = []
        if self.processes > PROCESSES_PER_CORE * self.cores:
            found.append(
                f"--processes {self.processes} is more than {PROCESSES_PER_CORE} per core on "
                f"this machine ({self.cores} cores); use --threads for jobs that wait on I/O"
            )
        if self.max_connections is not None and self.connections > self.max_connections:
            found.append(
                f"{self.processes} processes x (1 + {self.threads} threads) + 1 may open "
                f"{self.connections} database connections, more than the server's "
                f"max_connections ({self.max_connections})"
            )
        return found


def pool_size(processes: int, threads: int, using: str) -> PoolSize:
    """Measure the machine's cores and the server's connection limit."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return PoolSize(processes, threads, cores or 1, max_connections(using))


def max_connections(using: str) -> int | None:
    """Return the server's ``max_connections``; None where there is no such limit (SQLite)."""
    connection = connections[using]
    sql = {"mysql": "SELECT @@max_connections", "postgresql": "SHOW max_connections"}.get(
        connection.vendor
    )
    if sql is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return int(cursor.fetchone()[0])
