"""The app's tables: jobs, workers and their metrics, paused queues, archived jobs.

Must not import ``worker``, ``maintenance``, ``monitoring``, ``admin`` or ``management``:
every process loads the models, so they may depend only on ``managers``, ``states`` and
``db``. ``JobStatus`` and the status groups live in ``states`` and are re-exported here.
"""

from django_skipqueue.models.archive import JobArchive
from django_skipqueue.models.flow import FlowKey
from django_skipqueue.models.job import Job
from django_skipqueue.models.maintenance import MaintenanceRun
from django_skipqueue.models.queue import QueuePause
from django_skipqueue.models.worker import QueueMinute, WorkerProcess
from django_skipqueue.states import ACTIVE_STATUSES, FINISHED_STATUSES, KEYED_STATUSES, JobStatus

__all__ = [
    "ACTIVE_STATUSES",
    "FINISHED_STATUSES",
    "KEYED_STATUSES",
    "FlowKey",
    "Job",
    "JobArchive",
    "JobStatus",
    "MaintenanceRun",
    "QueueMinute",
    "QueuePause",
    "WorkerProcess",
]
