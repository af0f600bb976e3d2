"""The workflows API: batches with callbacks, chains, and what a callback reads of its batch."""

from __future__ import annotations

from .chains import Step, chain, step
from .opening import OpenBatch, batch, extend
from .results import BatchResult, Failure, batch_result

__all__ = [
    "BatchResult",
    "Failure",
    "OpenBatch",
    "Step",
    "batch",
    "batch_result",
    "chain",
    "extend",
    "step",
]
