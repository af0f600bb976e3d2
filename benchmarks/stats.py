"""Medians with their range, percentiles and ratios: the numbers the report prints."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def summary(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Median, min and max of the runs that produced a value (None: the run could not)."""
    real = [v for v in values if v is not None]
    if not real:
        return {"median": None, "min": None, "max": None, "runs": 0}
    return {
        "median": statistics.median(real),
        "min": min(real),
        "max": max(real),
        "runs": len(real),
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs
