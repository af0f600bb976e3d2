"""Purge progress for people: a live line on a terminal, plain lines elsewhere."""

from __future__ import annotations

import time

from django.core.management.base import OutputWrapper

from django_skipqueue.durations import format_seconds
from django_skipqueue.maintenance.purge_report import ChunkReport, LogReporter, Purge
from django_skipqueue.maintenance.replicas import LagReading


class TerminalReporter(LogReporter):
    """Redraw one progress line per chunk on a TTY; say each pause and resume on a line."""

    def __init__(self, out: OutputWrapper) -> None:
        super().__init__(every=10.0)
        self.out = out
        self.tty = out.isatty()
        self._last_pause_line = 0.0

    def chunk(self, purge: Purge, report: ChunkReport) -> None:
        super().chunk(purge, report)
        if self.tty:
            self.out.write("\r\033[K" + progress_line(purge), ending="")
            self.out.flush()

    def paused(self, purge: Purge, behind: list[LagReading]) -> None:
        now = time.monotonic()
        if now - self._last_pause_line < self.every:
            return
        self._last_pause_line = now
        reasons = "; ".join(reading.describe() for reading in behind)
        self._line(f"paused: {reasons} (limit {purge.options.max_replica_lag:g}s)")

    def resumed(self, purge: Purge, paused_for: float) -> None:
        self._last_pause_line = 0.0
        self._line(f"resumed after {format_seconds(paused_for)}: replicas caught up")

    def _line(self, text: str) -> None:
        if self.tty:
            self.out.write("\r\033[K", ending="")
        self.out.write(text)
        self.out.flush()


def progress_line(purge: Purge) -> str:
    """Rows done, estimated rows left and the rate, as one short line."""
    summary = purge.summary
    rate = summary.deleted / summary.transaction_seconds if summary.transaction_seconds else 0.0
    left = purge.rows_left()
    left_text = "?" if left is None else f"~{left:,}"
    verb = "counted" if summary.dry_run else "purged"
    return (
        f"{verb} {summary.deleted:,} rows, {left_text} left, {rate:,.0f} rows/s, "
        f"chunk {purge.chunk:,}"
    )
