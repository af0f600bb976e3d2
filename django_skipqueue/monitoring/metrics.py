"""What a process counts, and how it lands in the workers and per-minute tables.

Each process keeps its own counters in memory and writes them at heartbeat time: absolute
totals on its ``WorkerProcess`` row and one ``QueueMinute`` row per queue and minute. Only the
process itself writes its rows, so the writes never contend and a retried write is harmless.

Counter meanings (the same names on both tables):

- ``claimed``: jobs this process claimed;
- ``succeeded`` / ``failed``: attempts that ended the job that way (``failed`` = attempts spent);
- ``retried``: failed attempts that were given another try;
- ``reclaimed``: jobs a supervisor took back from a worker process that died;
- ``lost_leases``: completions the fence rejected (the job had been taken over);
- ``claim_queries``: claim transactions run (one per queue per claim round).

Claim latency is kept as a histogram over :data:`CLAIM_LATENCY_BUCKETS_MS` so that readers can
merge processes and minutes, then read percentiles with :func:`histogram_percentile`.
"""

from __future__ import annotations

import bisect
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

#: Upper bounds, in milliseconds, of the claim-latency histogram buckets. A stored histogram
#: has ``len(CLAIM_LATENCY_BUCKETS_MS) + 1`` counts: count ``i`` is for latencies ``<= bound i``
#: (and above bound ``i - 1``); the last count is for everything slower than the last bound.
CLAIM_LATENCY_BUCKETS_MS: tuple[float, ...] = (
    0.5,
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1000,
    2000,
    5000,
)
COUNTERS = (
    "claimed",
    "succeeded",
    "failed",
    "retried",
    "reclaimed",
    "lost_leases",
    "claim_queries",
)
#: Claim latencies kept for the workers table's p50/p95 ("a recent window").
RECENT_SAMPLES = 500


class Exporter(Protocol):
    """What a process reports as it goes, for Prometheus (see exporter.py)."""

    def claim(self, queue_name: str, seconds: float, tasks: Iterable[str]) -> None: ...

    def attempt(self, queue_name: str, task: str, outcome: str, seconds: float | None) -> None: ...

    def reclaim(self, queue_name: str, task: str) -> None: ...

    def database_error(self, role: str) -> None: ...

    def flush(self) -> None: ...

    def flush_due(self) -> float | None: ...


#: The exporter of this ``runworkers`` run (``--metrics-port``), or None: metrics are off, and
#: each hook costs one ``is None`` test.
exporter: Exporter | None = None


def empty_histogram() -> list[int]:
    return [0] * (len(CLAIM_LATENCY_BUCKETS_MS) + 1)


def bucket_of(milliseconds: float) -> int:
    """Return the index of the histogram count that ``milliseconds`` falls in."""
    return bisect.bisect_left(CLAIM_LATENCY_BUCKETS_MS, milliseconds)


def merge_histograms(histograms: Iterable[Sequence[int]]) -> list[int]:
    """Add histograms up (rows of several processes or minutes)."""
    total = empty_histogram()
    for histogram in histograms:
        for index, count in enumerate(histogram[: len(total)]):
            total[index] += count
    return total


def histogram_percentile(histogram: Sequence[int], fraction: float) -> float | None:
    """Return the bucket bound below which ``fraction`` (0-1) of the samples fall.

    The answer is an upper bound with the bucket's resolution; samples in the overflow bucket
    report as ``inf``. None when the histogram is empty.
    """
    total = sum(histogram)
    if total == 0:
        return None
    wanted = fraction * total
    seen = 0
    index = 0
    for index, count in enumerate(histogram):  # noqa: B007 - index is the answer
        seen += count
        if seen >= wanted and count:
            break
    return (
        CLAIM_LATENCY_BUCKETS_MS[index] if index < len(CLAIM_LATENCY_BUCKETS_MS) else float("inf")
    )


def exact_percentile(samples: Sequence[float], fraction: float) -> float | None:
    """Return the ``fraction`` percentile of raw samples (nearest rank), or None."""
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


@dataclass
class MinuteCounters:
    """One future QueueMinute row: absolute counts of one queue in one minute."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    histogram: list[int] = field(default_factory=empty_histogram)
    dirty: bool = True
    stored: bool = False


class Metrics:
    """The counters of one process: totals, per-minute rows, recent claim latencies."""

    def __init__(self, clock_offset: timedelta = timedelta(0)) -> None:
        # Minutes follow the database clock, the one every reader compares with.
        self.clock_offset = clock_offset
        self.totals = dict.fromkeys(COUNTERS, 0)
        self.minutes: dict[tuple[datetime, str], MinuteCounters] = {}
        self.recent_claims: deque[float] = deque(maxlen=RECENT_SAMPLES)
        #: Set before the fork in runworkers --metrics-port: the children inherit it.
        self.exporter = exporter
        #: The last minute current_minute() answered: (minutes since the epoch, its start).
        self._minute: tuple[int, datetime] = (-1, datetime.min.replace(tzinfo=UTC))

    def count(self, queue_name: str, counter: str, amount: int = 1) -> None:
        if amount:
            self.totals[counter] += amount
            row = self._row(queue_name)
            row.counts[counter] += amount
            row.dirty = True

    def claim_query(self, queue_name: str, milliseconds: float, claimed: int) -> None:
        """Record one claim transaction of ``queue_name`` and how many jobs it took."""
        self.recent_claims.append(milliseconds)
        self._row(queue_name).histogram[bucket_of(milliseconds)] += 1
        self.count(queue_name, "claim_queries")
        self.count(queue_name, "claimed", claimed)

    def claim_percentiles(self) -> tuple[float | None, float | None]:
        """Return the p50 and p95 claim latency of the recent window, in milliseconds."""
        samples = list(self.recent_claims)
        return exact_percentile(samples, 0.5), exact_percentile(samples, 0.95)

    def current_minute(self) -> datetime:
        """Return the database clock's current minute (worked out once per minute: every
        counted job asks)."""
        minute = int((time.time() + self.clock_offset.total_seconds()) // 60)
        if minute != self._minute[0]:
            self._minute = (minute, datetime.fromtimestamp(minute * 60, UTC))
        return self._minute[1]

    def dirty_rows(self) -> list[tuple[datetime, str, MinuteCounters]]:
        return [(m, q, row) for (m, q), row in self.minutes.items() if row.dirty]

    def forget_old_minutes(self) -> None:
        """Drop rows of past minutes once they are written: they will not change again."""
        current = self.current_minute()
        for key, row in list(self.minutes.items()):
            if key[0] < current and not row.dirty:
                del self.minutes[key]

    def _row(self, queue_name: str) -> MinuteCounters:
        key = (self.current_minute(), queue_name)
        row = self.minutes.get(key)
        if row is None:
            row = self.minutes[key] = MinuteCounters()
        return row
