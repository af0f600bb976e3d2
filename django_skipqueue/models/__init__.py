"""The app's tables: jobs, workers and their metrics, paused queues, archived jobs.

Must not import ``worker``, ``maintenance``, ``monitoring``, ``admin`` or ``management``:
every process loads the models, so they may depend only on ``managers`` and ``db``.
"""

from django_skipqueue.models.archive import JobArchive
from django_skipqueue.models.job import (
    ACTIVE_STATUSES,
    FINISHED_STATUSES,
    KEYED_STATUSES,
    Job,
    JobStatus,
)
from django_skipqueue.models.maintenance import MaintenanceRun
from django_skipqueue.models.queue import QueuePause
from django_skipqueue.models.worker import QueueMinute, WorkerProcess

__all__ = [
    "ACTIVE_STATUSES",
    "FINISHED_STATUSES",
    "KEYED_STATUSES",
    "Job",
    "JobArchive",
    "JobStatus",
    "MaintenanceRun",
    "QueueMinute",
    "QueuePause",
    "WorkerProcess",
]
