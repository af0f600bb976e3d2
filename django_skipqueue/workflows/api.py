"""The workflows API: batches with callbacks, chains, and what a callback reads of its batch."""

from __future__ import annotations

from django_skipqueue.workflows.chains import Step, chain, step
from django_skipqueue.workflows.opening import OpenBatch, batch, extend
from django_skipqueue.workflows.results import BatchResult, Failure, batch_result

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
