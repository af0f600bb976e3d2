"""The app's tables: jobs, workers and their metrics, paused queues, archived jobs."""

from .archive import JobArchive
from .job import ACTIVE_STATUSES, FINISHED_STATUSES, KEYED_STATUSES, Job, JobStatus
from .maintenance import MaintenanceRun
from .queue import QueuePause
from .worker import QueueMinute, WorkerProcess

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
