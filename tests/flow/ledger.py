"""Reading the flow ledger: executions per key as intervals on the database clock."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from testproject.demo.models import FlowLedgerEntry

Interval = tuple[datetime, datetime, int]


def intervals(kills: Sequence[datetime] = ()) -> dict[str, list[Interval]]:
    """(start, end, job id) of every execution, per key; an execution cut short by a kill has
    no end and counts until the first of ``kills`` after its start."""
    per_key: dict[str, list[Interval]] = defaultdict(list)
    for entry in FlowLedgerEntry.objects.order_by("started_at"):
        end = entry.ended_at or min((k for k in kills if k >= entry.started_at), default=None)
        assert end is not None, f"execution of job {entry.job_id} never ended"
        per_key[entry.key].append((entry.started_at, end, entry.job_id))
    return per_key


def most_at_once(runs: list[Interval]) -> int:
    """The most executions that overlap at one instant (an end before a start at a tie)."""
    events = sorted([(start, 1) for start, _, _ in runs] + [(end, -1) for _, end, _ in runs])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak
