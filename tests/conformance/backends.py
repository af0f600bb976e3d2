"""SkipQueueBackend in the roles of the backends that Django's tests name.

``django.tasks.backends.dummy.DummyBackend`` stores results and runs nothing: a SkipQueueBackend
with no worker does the same, and the dummy's test helpers (``results``, ``clear()``) read and
empty the jobs table. ``django.tasks.backends.immediate.ImmediateBackend`` runs each task as it
is enqueued: here a burst worker runs in the test's process after each enqueue (after the
commit, when the enqueue joined a transaction: until then no worker can see the job).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connections, transaction

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import DUMMY_BACKEND, IMMEDIATE_BACKEND, Task, TaskResult
from django_skipqueue.models import Job
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id

#: The backends Django's tests name, and the classes that stand in for them.
MAPPED = {
    DUMMY_BACKEND: f"{__name__}.StoringBackend",
    IMMEDIATE_BACKEND: f"{__name__}.RunningBackend",
}


class StoringBackend(SkipQueueBackend):
    """Store jobs, run none (no worker runs during the test), like Django's DummyBackend."""

    @property
    def results(self) -> list[TaskResult]:
        """Every job's result, oldest first (DummyBackend.results).

        The tests read it from async code too, where the dummy's list needs no query: the
        query then runs on a thread of its own.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._read_results()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(self._read_results_and_close).result()

    def _read_results(self) -> list[TaskResult]:
        return [self._result(job) for job in Job.objects.using(self.database).order_by("pk")]

    def _read_results_and_close(self) -> list[TaskResult]:
        try:
            return self._read_results()
        finally:
            connections.close_all()

    def clear(self) -> None:
        """Delete every job (DummyBackend.clear())."""
        Job.objects.using(self.database).all().delete()


class RunningBackend(StoringBackend):
    """Run each job as soon as it is enqueued, like Django's ImmediateBackend."""

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        result = super().enqueue(task, args, kwargs)
        if connections[self.database].in_atomic_block:
            transaction.on_commit(lambda: self.run_burst_worker(task.queue_name), self.database)
            return result
        self.run_burst_worker(task.queue_name)
        result.refresh()
        return result

    def run_burst_worker(self, queue_name: str) -> None:
        """Run a worker in this process until the queue is drained."""
        options = WorkerOptions(
            backend=self.alias, database=self.database, queues=(queue_name,),
            threads=1, burst=True, wakeup=False, grace=30,
        )  # fmt: skip
        Worker(options, owner=owner_id()).run()
