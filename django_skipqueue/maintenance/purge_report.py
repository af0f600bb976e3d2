"""What a purge tells: one report per chunk, pauses for replicas, and a final summary."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from django_skipqueue.durations import format_seconds
from django_skipqueue.maintenance.purge_options import PurgeOptions
from django_skipqueue.maintenance.replicas import LagReading

logger = logging.getLogger("django_skipqueue.purge")


@dataclass(frozen=True)
class ChunkReport:
    """One committed chunk (or, in a dry run, one chunk that would have been)."""

    deleted: int
    archived: int
    #: Length of the chunk's transaction.
    seconds: float
    #: Keys selected for the chunk (the chunk size in force).
    selected: int
    first_id: int
    last_id: int


@dataclass
class PurgeSummary:
    deleted: int = 0
    archived: int = 0
    chunks: int = 0
    largest_chunk: int = 0
    #: Wall-clock time of the run, pauses included.
    seconds: float = 0.0
    #: Time spent inside chunk transactions.
    transaction_seconds: float = 0.0
    longest_transaction: float = 0.0
    pauses: int = 0
    paused_seconds: float = 0.0
    #: Rows locked by someone else when their chunk ran: left for the next run.
    skipped: int = 0
    estimated_total: int | None = None
    interrupted: bool = False
    dry_run: bool = False

    def add(self, report: ChunkReport) -> None:
        self.deleted += report.deleted
        self.archived += report.archived
        self.chunks += 1
        self.largest_chunk = max(self.largest_chunk, report.deleted)
        self.transaction_seconds += report.seconds
        self.longest_transaction = max(self.longest_transaction, report.seconds)
        self.skipped += report.selected - report.deleted

    @property
    def rate(self) -> float:
        """Rows per second of wall-clock time."""
        return self.deleted / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rate": round(self.rate, 1)}

    def describe(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        parts = [
            f"{verb} {counted(self.deleted, 'row')} in {counted(self.chunks, 'chunk')}",
            f"{format_seconds(self.seconds)} ({self.rate:,.0f} rows/s)",
            f"largest chunk {self.largest_chunk:,}",
            f"longest transaction {self.longest_transaction * 1000:.0f} ms",
        ]
        if self.archived:
            parts.insert(1, f"archived {self.archived:,}")
        if self.pauses:
            parts.append(f"paused {self.pauses}x for {format_seconds(self.paused_seconds)}")
        if self.skipped:
            parts.append(f"{self.skipped:,} locked rows left for the next run")
        if self.interrupted:
            parts.append("interrupted: run it again to go on")
        return "; ".join(parts)


class Purge(Protocol):
    """What a reporter reads of the run it reports on: ``purge.Purge``, which imports this."""

    #: Rows in the next chunk.
    chunk: int
    options: PurgeOptions
    summary: PurgeSummary

    def rows_left(self) -> int | None: ...


class PurgeReporter(Protocol):
    def chunk(self, purge: Purge, report: ChunkReport) -> None: ...

    def paused(self, purge: Purge, behind: list[LagReading]) -> None: ...

    def resumed(self, purge: Purge, paused_for: float) -> None: ...


class LogReporter:
    """Report through logging: a pause once (then every 30 s), each chunk at DEBUG."""

    def __init__(self, every: float = 30.0) -> None:
        self.every = every
        self._last_pause_log = 0.0

    def chunk(self, purge: Purge, report: ChunkReport) -> None:
        logger.debug(
            "purge chunk deleted=%d archived=%d ms=%.0f next_chunk=%d last_id=%d",
            report.deleted,
            report.archived,
            report.seconds * 1000,
            purge.chunk,
            report.last_id,
        )

    def paused(self, purge: Purge, behind: list[LagReading]) -> None:
        now = time.monotonic()
        if now - self._last_pause_log >= self.every:
            self._last_pause_log = now
            logger.warning("purge paused: %s", "; ".join(r.describe() for r in behind))

    def resumed(self, purge: Purge, paused_for: float) -> None:
        self._last_pause_log = 0.0
        logger.warning("purge resumed after %s", format_seconds(paused_for))


def counted(number: int, noun: str) -> str:
    """Return ``number`` with ``noun`` in the singular or plural it needs ("1 row", "2 rows")."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"
