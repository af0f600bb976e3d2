"""Build ``django.tasks.TaskResult`` objects from job rows."""

from __future__ import annotations

from django_skipqueue.compat import Task, TaskError, TaskResult, TaskResultStatus
from django_skipqueue.models import Job, JobStatus

TASK_STATUS = {
    JobStatus.SCHEDULED: TaskResultStatus.READY,
    JobStatus.READY: TaskResultStatus.READY,
    JobStatus.CLAIMED: TaskResultStatus.RUNNING,
    JobStatus.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    JobStatus.FAILED: TaskResultStatus.FAILED,
    # django.tasks has no cancelled state; the job's errors say it was cancelled.
    JobStatus.CANCELLED: TaskResultStatus.FAILED,
}


def task_for_job(task: Task, job: Job) -> Task:
    """Return ``task`` with the queue, priority and run_after this job was enqueued with."""
    if (task.priority, task.queue_name, task.run_after) == (
        job.priority,
        job.queue_name,
        job.run_after,
    ):
        return task
    return task.using(priority=job.priority, queue_name=job.queue_name, run_after=job.run_after)


def build_result(job: Job, task: Task, backend_alias: str) -> TaskResult:
    """Return the TaskResult that describes ``job`` as it was last read."""
    worker_ids = list(job.worker_ids)
    if job.status == JobStatus.CLAIMED and job.owner:
        worker_ids.append(job.owner)
    result: TaskResult = TaskResult(
        task=task,
        id=str(job.pk),
        status=TASK_STATUS[JobStatus(job.status)],
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        last_attempted_at=job.last_attempted_at,
        args=job.args,
        kwargs=job.kwargs,
        backend=backend_alias,
        errors=[_task_error(error) for error in job.errors],
        worker_ids=worker_ids,
    )
    object.__setattr__(result, "_return_value", job.return_value)
    return result


def update_result(result: TaskResult, job: Job) -> TaskResult:
    """Bring ``result`` (built by :func:`build_result` when the attempt began) up to ``job``.

    An attempt changes only these fields; the rest (task, id, times of enqueue and start,
    arguments, backend) stay as they were built. TaskResult is frozen, hence the setattr.
    """
    changed = {
        "status": TASK_STATUS[JobStatus(job.status)],
        "finished_at": job.finished_at,
        "last_attempted_at": job.last_attempted_at,
        "errors": [_task_error(error) for error in job.errors],
        "worker_ids": list(job.worker_ids),
        "_return_value": job.return_value,
    }
    for name, value in changed.items():
        object.__setattr__(result, name, value)
    return result


def _task_error(error: dict[str, object]) -> TaskError:
    return TaskError(
        exception_class_path=str(error["exception_class_path"]),
        traceback=str(error["traceback"]),
    )
