"""The systems under benchmark: how to start their workers and how to see their backlog.

Each Django-based system runs in its own settings module (``benchmarks.peers.<name>``) and
database; the peers run from their own virtualenv so their packages never meet ours.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS_VENV = ROOT / "benchmarks" / ".venv-peers"
PEERS_PYTHON = str(PEERS_VENV / "bin" / "python")
OUR_PYTHON = sys.executable
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
#: The systems' database names start with this (``BENCH_DB_PREFIX``; ours: the prefix alone).
DB_PREFIX = os.environ.get("BENCH_DB_PREFIX", "sq_bench")


@dataclass(frozen=True)
class System:
    """One queue implementation, as the harness drives it."""

    name: str
    label: str
    python: str
    settings: str | None
    database: str | None
    #: Rows still to run, or None for Redis (see backlog.py).
    remaining_sql: str | None
    #: Tables emptied before each run.
    tables: tuple[str, ...] = ()
    #: Worker threads per process are a knob of this system.
    threaded: bool = False
    #: The system has a bulk enqueue API of its own.
    bulk: bool = False

    def env(self, **extra: str) -> dict[str, str]:
        """Return the environment for this system's processes."""
        env = dict(os.environ)
        env.pop("DATABASE_URL", None)
        env.update(
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            BENCH_REDIS_URL=REDIS_URL,
        )
        if self.settings:
            env["DJANGO_SETTINGS_MODULE"] = self.settings
        if self.database:
            env["BENCH_DB"] = self.database
        env.update(extra)
        return env

    def django(self, *args: str) -> list[str]:
        return [self.python, "-m", "django", *args]

    def worker_commands(self, processes: int, threads: int = 1) -> list[list[str]]:
        """Return the commands that start ``processes`` worker processes of this system."""
        return WORKER_COMMANDS[self.name](self, processes, threads)


def _ours(system: System, processes: int, threads: int) -> list[list[str]]:
    return [system.django("runworkers", "--processes", str(processes), "--threads", str(threads))]


def _raw(system: System, processes: int, threads: int) -> list[list[str]]:
    batch = os.environ.get("BENCH_RAW_BATCH", str(threads))
    cmd = [system.python, "-m", "benchmarks.raw_worker", "--forever", "--batch", batch]
    return [cmd for _ in range(processes)]


def _tasksdb(system: System, processes: int, threads: int) -> list[list[str]]:
    cmd = system.django("db_worker", "--no-startup-delay", "--no-reload", "-v", "0")
    return [cmd for _ in range(processes)]


def _ox(system: System, processes: int, threads: int) -> list[list[str]]:
    cmd = system.django("ox_worker", "--concurrency", str(threads), "-v", "0")
    return [[*cmd, "--processes", str(processes)]] if processes > 1 else [cmd]


def _q2(system: System, processes: int, threads: int) -> list[list[str]]:
    return [system.django("qcluster")]


def _celery(system: System, processes: int, threads: int) -> list[list[str]]:
    celery = str(Path(system.python).parent / "celery")
    pool = ["-P", "threads", "-c", str(threads)] if threads > 1 else ["-c", str(processes)]
    cmd = [
        celery,
        "-A",
        "benchmarks.peers.celery_app",
        "worker",
        *pool,
        "-Q",
        "bench",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "WARNING",
    ]
    return [cmd for _ in range(processes if threads > 1 else 1)]


WORKER_COMMANDS = {
    "ours": _ours,
    "raw": _raw,
    "tasksdb": _tasksdb,
    "ox": _ox,
    "q2": _q2,
    "celery": _celery,
}

OUR_REMAINING = "SELECT COUNT(*) FROM skipqueue_job WHERE status IN ('ready', 'claimed')"

SYSTEMS = {
    "ours": System(
        "ours",
        "django-skipqueue",
        OUR_PYTHON,
        "benchmarks.peers.ours",
        DB_PREFIX,
        OUR_REMAINING,
        ("skipqueue_job", "skipqueue_worker"),
        threaded=True,
        bulk=True,
    ),
    "raw": System(
        "raw",
        "raw SQL (mysqlclient)",
        OUR_PYTHON,
        "benchmarks.peers.ours",
        DB_PREFIX,
        OUR_REMAINING,
        ("skipqueue_job",),
        threaded=True,
        bulk=True,
    ),
    "tasksdb": System(
        "tasksdb",
        "django-tasks-db",
        PEERS_PYTHON,
        "benchmarks.peers.tasksdb",
        f"{DB_PREFIX}_tasksdb",
        "SELECT COUNT(*) FROM django_tasks_database_dbtaskresult "
        "WHERE status IN ('READY', 'RUNNING')",
        ("django_tasks_database_dbtaskresult",),
    ),
    "ox": System(
        "ox",
        "django-ox",
        PEERS_PYTHON,
        "benchmarks.peers.ox",
        f"{DB_PREFIX}_ox",
        "SELECT COUNT(*) FROM django_ox_oxtask WHERE status IN ('READY', 'RUNNING')",
        ("django_ox_oxtask",),
        threaded=True,
        bulk=True,
    ),
    "q2": System(
        "q2",
        "django-q2 (ORM broker)",
        PEERS_PYTHON,
        "benchmarks.peers.q2",
        f"{DB_PREFIX}_q2",
        "SELECT COUNT(*) FROM django_q_ormq",
        ("django_q_ormq", "django_q_task"),
    ),
    "celery": System(
        "celery", "Celery + Redis", PEERS_PYTHON, None, None, None, (), threaded=True
    ),
}

PEER_ORDER = ("ours", "raw", "tasksdb", "ox", "q2", "celery")
