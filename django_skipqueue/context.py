"""A job in Django's terms while it runs: its Task, its TaskResult, and its JobContext.

The worker turns a claimed row into what Django's Tasks API hands a task and its caller: the
Task its stored path names (:func:`resolve_task`, which imports nothing else, and only the
project's own modules), the TaskResult its row describes (:func:`build_result`, brought up to
date by :func:`update_result` when the attempt ends; ``get_result()`` builds the same) and, for
a task that takes a context, the :class:`JobContext` that holds that result and cooperative
cancellation.

Cancelling a running job sets ``Job.cancel_requested``; the worker reads it back when it renews
the job's lease and raises the flag here. A long task checks it between steps::

    @task(takes_context=True)
    def rebuild_index(context, shard: int) -> None:
        for batch in batches(shard):
            context.raise_if_cancel_requested()  # the job ends "cancelled"
            index(batch)

Code that may run on other backends too can ask :func:`is_cancel_requested` instead.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings

from django_skipqueue.compat import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import JobCancelled, TaskNotFound
from django_skipqueue.states import JobStatus

if TYPE_CHECKING:
    from django_skipqueue.models import Job

# The Task a stored path names.
#
# A job row, a schedule or a batch callback names its task by dotted path. Importing a module
# runs it (``this`` prints the Zen of Python, ``antigravity`` opens a browser) before anything
# could check that the path names a Task, so a path is looked up only in a module that is
# imported already (every module that defines a task is, once its task exists; looking in it
# runs no code) or that is one of the project's own: inside the package of an installed app
# (``AppConfig.name``), inside the top-level package of the settings module (the project
# package ``startproject`` makes), or inside a module or package SKIPQUEUE_TASK_MODULES lists.
# The check comes before ``importlib``, which imports each parent package first.

_resolved: dict[str, Task] = {}

#: Said when a stored path names no Task: the likely causes and the way out.
RENAMED = (
    " Renamed or removed? A job keeps the path it was enqueued with: keep the old name as an "
    "alias (old_name = new_name) until its jobs are done, or deploy workers with the code "
    "that defines it, then retry the failed job."
)


def resolve_task(path: str) -> Task:
    """Return the Task a stored path names, importing nothing but the module it names.

    Rows are data: a path that names anything other than a Task (``os.system``, say) is
    refused before it could be called, and a module outside the project's packages (``this``)
    before it could be imported. A path is resolved once per process; after that it costs a
    dict lookup.
    """
    task = _resolved.get(path)
    if task is None:
        task = _resolved[path] = _import_task(path)
    return task


def _import_task(path: str) -> Task:
    module_name, _, attribute = path.rpartition(".")
    if not module_name or not all(part.isidentifier() for part in path.split(".")):
        raise TaskNotFound(f"{path!r} is not a dotted path to a module-level Task.")
    module = sys.modules.get(module_name) or _import_project_module(path, module_name)
    candidate = vars(module).get(attribute)
    if candidate is None:
        raise TaskNotFound(f"{path!r} names nothing, not a Task.{RENAMED}")
    if not isinstance(candidate, Task):
        kind = type(candidate).__qualname__
        raise TaskNotFound(f"{path!r} names a {kind}, not a Task; refusing to run it.")
    return candidate


def _import_project_module(path: str, module_name: str) -> ModuleType:
    """Import the module of task ``path`` if it is one of the project's own, else refuse it."""
    if not is_project_module(module_name):
        raise TaskNotFound(
            f"Task path {path!r} is outside the project's packages: module {module_name!r} "
            "is not in an installed app, the settings module's package or "
            "SKIPQUEUE_TASK_MODULES, so it was not imported (importing runs its code). A task "
            "defined in another package: list that package in SKIPQUEUE_TASK_MODULES."
        )
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise TaskNotFound(
            f"Cannot import the module of task {path!r}: {error}.{RENAMED}"
        ) from error


def is_project_module(module_name: str) -> bool:
    """Tell whether a module lies in one of the packages task paths may import."""
    return any(
        module_name == package or module_name.startswith(f"{package}.")
        for package in task_packages()
    )


def task_packages() -> list[str]:
    """Installed apps' packages, the settings module's top-level package, SKIPQUEUE_TASK_MODULES.

    Read again for each path not resolved yet (once per path and process), so that it follows
    ``override_settings`` in tests.
    """
    packages = [config.name for config in apps.get_app_configs()]
    settings_module = getattr(settings, "SETTINGS_MODULE", None) or ""
    if "." in settings_module:
        packages.append(settings_module.partition(".")[0])
    packages.extend(get_settings().TASK_MODULES)
    return packages


# The TaskResult a row describes.

TASK_STATUS = {
    JobStatus.SCHEDULED: TaskResultStatus.READY,
    JobStatus.READY: TaskResultStatus.READY,
    # Waiting for a flow slot or rate window: not running yet.
    JobStatus.BLOCKED: TaskResultStatus.READY,
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


#: What a new job's result has of its own; it shares the other fields of TaskResult with the
#: results of its task's other new jobs (see :func:`new_results`).
_OWN_FIELDS = ("id", "enqueued_at", "args", "kwargs", "errors", "worker_ids")


def new_results(inserted: Iterable[tuple[Job, Task]], backend_alias: str) -> list[TaskResult]:
    """Return the TaskResults of jobs a bulk enqueue has just inserted, in order.

    Such a job has no attempt yet, so its result differs from those of its task's other new
    jobs only in its id, enqueue time and arguments. The first result of each task (and
    status, queue, priority, run_after) is built in full by :func:`build_result`; the others
    take its other fields and their own, without the dataclass's constructor, whose
    ``__post_init__`` copies arguments that are plain JSON already (``normalize_arguments``
    made them, and only this result holds them): building results took 7.5 us of a bulk
    enqueue's 18 us of CPU a job.
    """
    shared: dict[tuple[Any, ...], tuple[tuple[str, Any], ...]] = {}
    results = []
    setter = object.__setattr__
    for job, task in inserted:
        key = (id(task), job.status, job.queue_name, job.priority, job.run_after)
        common = shared.get(key)
        if common is None:
            first = build_result(job, task_for_job(task, job), backend_alias)
            shared[key] = tuple(
                (each.name, getattr(first, each.name))
                for each in fields(TaskResult)
                if each.name not in _OWN_FIELDS
            )
            results.append(first)
            continue
        result = object.__new__(TaskResult)
        for name, value in common:
            setter(result, name, value)
        setter(result, "id", str(job.pk))
        setter(result, "enqueued_at", job.enqueued_at)
        setter(result, "args", job.args)
        setter(result, "kwargs", job.kwargs)
        setter(result, "errors", [])
        setter(result, "worker_ids", [])
        results.append(result)
    return results


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


# The context of a running attempt.

#: The job whose attempt runs in this thread or coroutine (None outside one): JSON log lines
#: read it to say which job a line is about (monitoring/logs.py).
current_job: ContextVar[Any] = ContextVar("skipqueue_current_job", default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobContext(TaskContext):  # type: ignore[misc]  # the stubs miss frozen=True
    """A ``TaskContext`` whose job can be asked to stop."""

    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancel_requested(self) -> bool:
        """Tell whether someone asked this job to stop (seen at the last lease renewal)."""
        return self.cancel_event.is_set()

    def raise_if_cancel_requested(self) -> None:
        """Raise JobCancelled when cancellation was requested: the job then ends cancelled."""
        if self.cancel_requested:
            raise JobCancelled(f"Job {self.task_result.id} was cancelled while running.")


def is_cancel_requested(context: TaskContext) -> bool:
    """Tell whether the job of ``context`` should stop; False on backends that cannot say."""
    return bool(getattr(context, "cancel_requested", False))
