"""WorkerOptions: what ``runworkers`` hands to the supervisor and to each worker process."""

from __future__ import annotations

from dataclasses import dataclass, field

from django_skipqueue.conf import get_settings

#: A worker exits with this code to be replaced at once (max jobs, memory, a timed-out job).
RECYCLE_EXIT_CODE = 75
#: A ``--burst`` worker exits with this code when the database refuses its credentials: not
#: restarted (waiting cannot fix them), and ``runworkers`` exits 1 (EX_CONFIG of sysexits.h).
REFUSED_EXIT_CODE = 78


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """The configuration of one ``runworkers`` run (each default is the command's)."""

    #: Task backend alias, and the database alias that backend keeps its jobs in.
    backend: str = "default"
    database: str = "default"
    #: Queues to claim from, in this order (one claim query per queue). Empty: every queue
    #: (a backend whose QUEUES is ``[]`` accepts any queue name), those with ready jobs
    #: claimed in the order of their names.
    queues: tuple[str, ...] = ("default",)
    #: Jobs one process runs at a time (threads; coroutines share an event loop).
    threads: int = 4
    #: Drain the ready jobs, then exit.
    burst: bool = False
    #: Recycle a worker process after it started this many jobs.
    max_jobs: int | None = None
    #: Recycle a worker process whose resident memory exceeds this many MiB.
    max_memory_mb: int | None = None
    #: Seconds running jobs get to finish after SIGTERM/SIGINT.
    grace: float = 25.0
    #: Lease length in seconds for every claim, instead of each job's own.
    lease: float | None = None
    #: Longest idle pause per queue between claim rounds (default SKIPQUEUE_IDLE_POLL_SECONDS).
    poll_max: float = field(default_factory=lambda: get_settings().IDLE_POLL_SECONDS)
    #: Listen for wake-up datagrams (on SKIPQUEUE_WAKEUP_HOST).
    wakeup: bool = True
    #: Jobs claimed beyond the free threads (default SKIPQUEUE_PREFETCH); None: adaptive.
    prefetch: int | None = field(default_factory=lambda: get_settings().PREFETCH)
    #: Longest wait of a job claimed ahead before it is given back (SKIPQUEUE_PREFETCH_MAX_WAIT).
    prefetch_max_wait: float = field(default_factory=lambda: get_settings().PREFETCH_MAX_WAIT)

    def describe(self) -> str:
        """Return the options as the ``key=value`` pairs of the start-up banner."""
        pairs = {
            "backend": self.backend,
            "database": self.database,
            "queues": ",".join(self.queues) or "*",
            "threads": self.threads,
            "burst": self.burst,
            "max_jobs": self.max_jobs,
            "max_memory_mb": self.max_memory_mb,
            "grace": self.grace,
            "lease": self.lease,
            "poll_max": self.poll_max,
            "wakeup": self.wakeup,
            "prefetch": "auto" if self.prefetch is None else self.prefetch,
        }
        return " ".join(f"{key}={value}" for key, value in pairs.items())
