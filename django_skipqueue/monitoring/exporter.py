"""What worker processes did, as Prometheus counters and histograms (runworkers --metrics-port).

The supervisor forks its workers, and replaces the ones that die, so each process's counts must
add up across processes without counting twice. This uses prometheus-client's multiprocess
mode: every process writes its values to memory-mapped files named after its pid, in a
directory of this run, and the supervisor's HTTP endpoint sums the files when scraped. A dead
worker's counters stay in its files, so totals never go back; its replacement has a new pid and
starts files of its own; ``mark_process_dead`` drops a dead process's live gauges.

Off by default: without ``--metrics-port`` nothing here is imported, and the worker's hooks are
one ``is None`` test each. With it on, the hooks add to plain dicts, on the worker's main thread
(outcomes and claims are recorded there, never on job threads), and ``flush()`` writes them to
the memory maps before the loop starts the jobs it claimed, and otherwise at most every
``LAZY_FLUSH_SECONDS``: a write locks and checks the pid, a few microseconds each, and one per
job for each metric cost a drain of no-op jobs several percent (a flush on every turn of the
loop, about 5%).
"""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django_skipqueue.monitoring import metrics
from django_skipqueue.monitoring.metrics import CLAIM_LATENCY_BUCKETS_MS

#: Job duration buckets, in seconds.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
#: Claim latency buckets, in seconds: the same bounds as the workers table's histogram.
CLAIM_BUCKETS = tuple(bound / 1000 for bound in CLAIM_LATENCY_BUCKETS_MS)
#: Jobs one claim query took.
BATCH_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Ways an attempt ends, the ``outcome`` label of skipqueue_attempts_total.
OUTCOMES = ("succeeded", "failed", "retried", "cancelled", "lost_lease")
#: Longest that counts wait in memory while the loop starts no job (a turn that starts jobs
#: writes them first, since a job may kill its process).
LAZY_FLUSH_SECONDS = 0.5


class ProcessMetrics:
    """The metrics of one ``runworkers`` run, written by the supervisor and every worker."""

    def __init__(self, directory: str) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.directory = directory
        labels = ["queue", "task"]
        self.claimed = Counter("skipqueue_jobs_claimed", "Jobs claimed.", labels, registry=None)
        self.attempts = Counter(
            "skipqueue_attempts",
            "Attempts that ended, by outcome: succeeded, failed (attempts spent), retried, "
            "cancelled, lost_lease (the fence rejected the completion).",
            [*labels, "outcome"],
            registry=None,
        )
        self.reclaimed = Counter(
            "skipqueue_jobs_reclaimed",
            "Jobs the supervisor took back from a worker process that died.",
            labels,
            registry=None,
        )
        self.duration = Histogram(
            "skipqueue_job_duration_seconds",
            "Time an attempt ran, from its start to its outcome.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=None,
        )
        self.claim_latency = Histogram(
            "skipqueue_claim_duration_seconds",
            "Time of one claim transaction (one queue).",
            ["queue"],
            buckets=CLAIM_BUCKETS,
            registry=None,
        )
        self.batch = Histogram(
            "skipqueue_claim_batch_size",
            "Jobs one claim transaction took.",
            ["queue"],
            buckets=BATCH_BUCKETS,
            registry=None,
        )
        self.idle = Counter(
            "skipqueue_idle_polls",
            "Claim transactions that found no job.",
            ["queue"],
            registry=None,
        )
        self.db_errors = Counter(
            "skipqueue_database_errors",
            "Database errors a worker process or the supervisor met (then retried).",
            ["role"],
            registry=None,
        )
        self.processes = Gauge(
            "skipqueue_worker_processes",
            "Worker processes running (each live process counts 1).",
            registry=None,
            multiprocess_mode="livesum",
        )

        #: What happened since the last flush: counter key -> amount, histogram key -> values.
        self._counts: dict[tuple[Any, tuple[str, ...]], float] = defaultdict(float)
        self._observed: dict[tuple[Any, tuple[str, ...]], list[float]] = defaultdict(list)
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        self._histograms: dict[tuple[Any, tuple[str, ...]], tuple[Any, ...]] = {}
        self._flushed_at = time.monotonic()

    # The hooks (monitoring.metrics.Exporter): plain dict updates, written out by flush().

    def claim(self, queue_name: str, seconds: float, tasks: Iterable[str]) -> None:
        got = 0
        for task in tasks:
            self._counts[self.claimed, (queue_name, task)] += 1
            got += 1
        self._observed[self.claim_latency, (queue_name,)].append(seconds)
        self._observed[self.batch, (queue_name,)].append(got)
        if not got:
            self._counts[self.idle, (queue_name,)] += 1

    def attempt(self, queue_name: str, task: str, outcome: str, seconds: float | None) -> None:
        self._counts[self.attempts, (queue_name, task, outcome)] += 1
        if seconds is not None:
            self._observed[self.duration, (queue_name, task)].append(seconds)

    def reclaim(self, queue_name: str, task: str) -> None:
        self._child(self.reclaimed, (queue_name, task)).inc()

    def database_error(self, role: str) -> None:
        self._child(self.db_errors, (role,)).inc()

    def worker_started(self) -> None:
        self.processes.set(1)

    def flush_due(self) -> float | None:
        """When (``time.monotonic()``) the counts held must be written; None if none are."""
        if not (self._counts or self._observed):
            return None
        return self._flushed_at + LAZY_FLUSH_SECONDS

    def flush(self) -> None:
        """Write what was counted since the last flush to this process's files.

        The worker calls it before it starts the jobs it claimed, and on the other turns of
        its loop once ``flush_due()`` has passed: one write per counter and histogram bucket
        touched, instead of a few per job (each write locks and checks the pid). A process
        killed while a job runs has flushed every outcome and claim before that job began,
        unless the job was claimed ahead and started on its thread while the loop was
        recording (docs/reference/metrics.md).
        """
        self._flushed_at = time.monotonic()
        if self._counts:
            for (metric, labels), amount in self._counts.items():
                self._child(metric, labels).inc(amount)
            self._counts.clear()
        if self._observed:
            for key, samples in self._observed.items():
                parts = self._histograms.get(key)
                if parts is None:
                    parts = self._histograms[key] = _histogram_parts(self._child(*key))
                _observe_all(parts, samples)
            self._observed.clear()

    def _child(self, metric: Any, labels: tuple[str, ...]) -> Any:
        child = self._children.get((metric, labels))
        if child is None:
            child = self._children[metric, labels] = metric.labels(*labels)
        return child


def _observe_all(parts: tuple[Any, ...], samples: list[float]) -> None:
    """Add ``samples`` to a histogram child with one write per bucket touched.

    prometheus-client keeps a histogram as one value per bucket plus a sum, and observe()
    adds to the sum and to the first bucket whose bound holds the sample (the exposition
    makes them cumulative). Doing the same for a batch is what observe() would do one sample
    at a time. ``parts`` is (child, None, None) for a client that keeps them otherwise: then
    observe() itself runs.
    """
    child, bounds, buckets = parts
    if bounds is None:
        for sample in samples:
            child.observe(sample)
        return
    if len(samples) == 1:
        child._sum.inc(samples[0])
        buckets[bisect.bisect_left(bounds, samples[0])].inc(1)
        return
    per_bucket: dict[int, int] = defaultdict(int)
    for sample in samples:
        per_bucket[bisect.bisect_left(bounds, sample)] += 1
    child._sum.inc(sum(samples))
    for index, count in per_bucket.items():
        buckets[index].inc(count)


def _histogram_parts(child: Any) -> tuple[Any, ...]:
    """(child, bucket bounds, bucket values), or (child, None, None) if the client differs."""
    bounds: Any = getattr(child, "_upper_bounds", None)
    buckets: Any = getattr(child, "_buckets", None)
    usable = bounds is not None and buckets is not None and hasattr(child, "_sum")
    if not usable or len(bounds) != len(buckets):
        return child, None, None
    return child, tuple(bounds), buckets


class Endpoint:
    """The run's metrics directory and HTTP endpoint, owned by the supervisor."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.port = port
        self.host = host
        self.directory = tempfile.mkdtemp(prefix="skipqueue-metrics-")
        self.server: Any = None
        self.metrics = self._multiprocess()

    def _multiprocess(self) -> ProcessMetrics:
        """Switch prometheus-client to multiprocess mode for this run, then make the metrics.

        The client picks its value class when first imported, from PROMETHEUS_MULTIPROC_DIR:
        it is set here (for this process and the workers it forks) and the class chosen again,
        in case the client was imported before.
        """
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = self.directory
        from prometheus_client import values

        values.ValueClass = values.MultiProcessValue()
        return ProcessMetrics(self.directory)

    def start(self) -> None:
        """Serve the summed files on ``host:port`` (a daemon thread of the supervisor)."""
        from prometheus_client import CollectorRegistry, start_http_server
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.directory)
        self.server, _ = start_http_server(self.port, addr=self.host, registry=registry)
        metrics.exporter = self.metrics

    def in_child(self, *, worker: bool) -> None:
        """In a forked child: let go of the listening socket (the supervisor serves it)."""
        if self.server is not None:
            self.server.socket.close()
            self.server = None
        if worker:
            self.metrics.worker_started()

    def process_died(self, pid: int) -> None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, self.directory)

    def stop(self) -> None:
        metrics.exporter = None
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        shutil.rmtree(self.directory, ignore_errors=True)
