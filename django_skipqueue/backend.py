"""SkipQueueBackend: the ``django.tasks`` backend that stores jobs in the database."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core.checks import CheckMessage
from django.db import transaction
from django.utils import timezone

from django_skipqueue import checks, setting_checks
from django_skipqueue.compat import (
    DEFAULT_TASK_QUEUE_NAME,
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    task_enqueued,
)
from django_skipqueue.conf import get_settings
from django_skipqueue.context import build_result, new_results, resolve_task, task_for_job
from django_skipqueue.db.text import unstorable
from django_skipqueue.exceptions import AppNotInstalled, InvalidQueueName, InvalidTaskOption
from django_skipqueue.flow.options import Flow, check_flow_options, flow_of
from django_skipqueue.monitoring import tracing
from django_skipqueue.states import JobStatus
from django_skipqueue.tasks import (
    QUEUE_NAME_PATTERN,
    REPLACEABLE,
    SkipQueueTask,
    check_key_template,
)

if TYPE_CHECKING:
    from datetime import datetime

    from django_skipqueue.conf import SkipQueueSettings
    from django_skipqueue.models import Job

# The modules that use the models are imported by the methods that need them: this module
# must load without django_skipqueue in INSTALLED_APPS, so that the backend can say to add it
# where importing the models would raise an error about an internal model.

#: What unique_while may name.
_STATUS_VALUES = frozenset(status.value for status in JobStatus)
TaskCall = tuple[Task, Sequence[Any], Mapping[str, Any]]


class EnqueuedMany(list[TaskResult]):
    """The results of ``enqueue_many()`` in call order, and which calls were duplicates.

    ``duplicates`` maps the index of each keyed call that inserted nothing to the result of
    the job that holds its key (also at that index of the list): reported, not dropped.
    """

    def __init__(self) -> None:
        super().__init__()
        self.duplicates: dict[int, TaskResult] = {}


class SkipQueueBackend(BaseTaskBackend):
    task_class = SkipQueueTask

    # Jobs with a future run_after wait as SCHEDULED until due.
    supports_defer = True
    # Coroutine tasks run on the worker's event loop.
    supports_async_task = True
    # Results live in the jobs table and are readable from any process.
    supports_get_result = True
    # Claims take the highest priority first, then the oldest job.
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        if not apps.is_installed("django_skipqueue"):
            raise AppNotInstalled(
                f"Task backend {alias!r} is a SkipQueueBackend, but 'django_skipqueue' is not "
                "in INSTALLED_APPS: add it there (its tables hold the jobs), then run migrate."
            )
        # Kept in settings order: workers claim from queues in this order by default.
        self.queue_names: list[str] = list(params.get("QUEUES", [DEFAULT_TASK_QUEUE_NAME]))
        self.database: str = self.options.get("DATABASE", "default")
        self.params = params

    def validate_task(self, task: Task) -> None:
        """Refuse a Task this backend cannot store or run, with a specific error."""
        if not QUEUE_NAME_PATTERN.fullmatch(task.queue_name):
            raise InvalidQueueName(
                f"Queue name {task.queue_name!r} is invalid: use 1-64 letters, digits, "
                "'_', '.', ':' or '-', starting with a letter or digit."
            )
        try:
            super().validate_task(task)
        except InvalidTask as error:
            if not self.queues or task.queue_name in self.queues:
                raise
            raise InvalidTask(
                setting_checks.queue_not_configured(self, task.queue_name)
            ) from error
        validate_options(task)

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        """Insert a job on the queue's connection, inside the caller's transaction if any."""
        from django_skipqueue.enqueue import build_job, insert_job, join_batch, not_carried
        from django_skipqueue.flow import admission

        self.validate_task(task)
        replace = getattr(task, "unique_replace", ())
        job = build_job(task, args, kwargs)
        span = tracing.start_enqueue(job.task_path, job.queue_name, [job]) if _traced() else None
        try:
            flow = flow_of(task, args, kwargs)
            if flow is None:
                job, created = insert_job(job, self.database, replace)
            else:
                job, created = admission.enqueue(job, flow, self.database, replace)
        except BaseException as error:
            if span is not None:
                tracing.end_enqueue(span, [job], error)
            if isinstance(error, UnicodeEncodeError):
                raise not_carried(error, self.database) from error
            raise
        if span is not None:
            tracing.end_enqueue(span, [job])
        result = self._result(job, task if created else None)
        if created:
            if job.batch_id is not None:
                join_batch([job], self.database)
            task_enqueued.send(type(self), task_result=result)
        if created or replace:
            self._wake_workers([job])
        return result

    def enqueue_many(self, calls: Iterable[TaskCall]) -> EnqueuedMany:
        """Enqueue many task calls with multi-row INSERTs; return their results in order.

        See :meth:`_enqueue_many`; a key the connection's character set cannot carry raises
        InvalidTaskOption, as in :meth:`enqueue`.
        """
        from django_skipqueue.enqueue import not_carried

        try:
            return self._enqueue_many(calls)
        except UnicodeEncodeError as error:
            raise not_carried(error, self.database) from error

    def _enqueue_many(self, calls: Iterable[TaskCall]) -> EnqueuedMany:
        """Enqueue many task calls with multi-row INSERTs; return their results in order.

        Keyed calls (an idempotency key, a unique_key) go in with one ``INSERT IGNORE`` per
        batch: the result of a call whose key a live job (or an earlier call of the bulk)
        holds is that job's, and its index is in ``duplicates``. Calls of a task with
        ``unique_replace`` are enqueued one by one, as ``enqueue()`` does.
        """
        from django_skipqueue.enqueue import build_jobs, join_batch
        from django_skipqueue.flow import admission
        from django_skipqueue.flow.options import has_flow

        calls = list(calls)
        tasks = {id(task): task for task, _, _ in calls}.values()
        for task in tasks:
            self.validate_task(task)
        # Most bulks are of tasks with no flow control and no unique_replace: asked once a task.
        flowing = {id(task) for task in tasks if has_flow(task)}
        replaceable = {id(task) for task in tasks if getattr(task, "unique_replace", None)}
        config = get_settings()
        now = timezone.now()
        if not flowing and not replaceable and self._can_send_ahead(tasks):
            return self._enqueue_sent_ahead(calls, config, now)
        jobs = build_jobs(calls, config=config, now=now)
        if jobs and _traced():  # one span for the call, its context stored with every job
            span = tracing.start_enqueue(jobs[0].task_path, jobs[0].queue_name, jobs)
            tracing.end_enqueue(span, jobs)
        flows, plain, replacing, keyed = _kinds(calls, jobs, flowing, replaceable)
        answers = self._insert(calls, jobs, plain, keyed, replacing)
        if flows:
            # In key order (each key's calls in call order): two bulk enqueues lock the keys'
            # rows in the same order, so they never deadlock each other.
            with transaction.atomic(using=self.database):
                for i, flow in sorted(flows.items(), key=lambda item: (item[1].key, item[0])):
                    replace = getattr(calls[i][0], "unique_replace", ())
                    answers[i] = admission.enqueue(jobs[i], flow, self.database, replace)
        created = [job for job, new in answers.values() if new]
        if jobs and jobs[0].batch_id is not None:
            join_batch(created, self.database)
        results = self._results(calls, answers)
        self._wake_workers(created + [answers[i][0] for i in replacing])
        return results

    def _insert(
        self,
        calls: Sequence[TaskCall],
        jobs: Sequence[Job],
        plain: list[int],
        keyed: list[int],
        replacing: set[int],
    ) -> dict[int, tuple[Job, bool]]:
        """Insert the plain, keyed and replacing calls' jobs; return (job, new) by call index."""
        from django_skipqueue.enqueue import insert_job, insert_jobs, insert_keyed_jobs

        inserted = insert_jobs([jobs[i] for i in plain], self.database)
        answers: dict[int, tuple[Job, bool]] = {
            i: (job, True) for i, job in zip(plain, inserted, strict=True)
        }
        answers.update(
            zip(keyed, insert_keyed_jobs([jobs[i] for i in keyed], self.database), strict=True)
        )
        for i in sorted(replacing):
            replace = getattr(calls[i][0], "unique_replace", ())
            answers[i] = insert_job(jobs[i], self.database, replace)
        return answers

    def _results(
        self, calls: Sequence[TaskCall], answers: dict[int, tuple[Job, bool]]
    ) -> EnqueuedMany:
        """The results in call order; task_enqueued for each new job, duplicates marked."""
        # The new jobs' results are built together (copies of one per task, see new_results).
        new = [i for i in range(len(calls)) if answers[i][1]]
        fresh = new_results(((answers[i][0], calls[i][0]) for i in new), self.alias)
        built = dict(zip(new, fresh, strict=True))
        results = EnqueuedMany()
        for i in range(len(calls)):
            result = built.get(i)
            if result is not None:
                results.append(result)
                task_enqueued.send(type(self), task_result=result)
            else:
                results.append(result := self._result(answers[i][0]))
                results.duplicates[i] = result
        return results

    def _can_send_ahead(self, tasks: Iterable[Task]) -> bool:
        """Whether every call is plain (no key, no flow, no tracing) on a connection that can
        build the next chunk of rows while the server inserts the last (MySQL, MariaDB)."""
        from django_skipqueue.db.bulkinsert import can_send_ahead

        return (
            all(
                getattr(task, "idempotency_key", None) is None
                and getattr(task, "unique_key", None) is None
                for task in tasks
            )
            and not _traced()
            and can_send_ahead(self.database)
        )

    def _enqueue_sent_ahead(
        self, calls: list[TaskCall], config: SkipQueueSettings, now: datetime
    ) -> EnqueuedMany:
        """Enqueue plain calls with each chunk built while the server inserts the one before.

        The results are built while the server inserts too; ``task_enqueued`` is sent once
        the transaction is done, as for the other calls.
        """
        from django_skipqueue.enqueue import insert_calls_sent_ahead, join_batch

        results = EnqueuedMany()

        def inserted(jobs: Sequence[Job], chunk: Sequence[TaskCall]) -> None:
            tasks = (task for task, _, _ in chunk)
            results.extend(new_results(zip(jobs, tasks, strict=True), self.alias))

        jobs = insert_calls_sent_ahead(
            calls, self.database, config=config, now=now, inserted=inserted
        )
        if jobs and jobs[0].batch_id is not None:
            join_batch(jobs, self.database)
        for result in results:
            task_enqueued.send(type(self), task_result=result)
        self._wake_workers(jobs)
        return results

    def _wake_workers(self, jobs: list[Job]) -> None:
        """Once the jobs commit, wake idle workers of their queues (best effort)."""
        from django_skipqueue import wakeup

        queues = {job.queue_name for job in jobs if job.status == JobStatus.READY}
        if queues:
            wakeup.after_commit(self.database, queues)

    def get_result(self, result_id: str) -> TaskResult:
        """Retrieve a task result by id."""
        from django_skipqueue.models import Job

        try:
            job = Job.objects.using(self.database).get(pk=int(result_id))
        except (ValueError, TypeError, Job.DoesNotExist):
            raise TaskResultDoesNotExist(result_id) from None
        return self._result(job)

    def _result(self, job: Job, task: Task | None = None) -> TaskResult:
        task = task or resolve_task(job.task_path)
        return build_result(job, task_for_job(task, job), self.alias)

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        return [*setting_checks.check_entry(self), *checks.check_backend(self)]


def validate_options(task: Task) -> None:
    """Check this backend's per-task options (see SkipQueueTask)."""
    _check_range(task, "max_attempts", 1, 1000)
    _check_range(task, "lease", 1, 86_400)
    _check_range(task, "timeout", 1, 7 * 86_400)
    backoff = getattr(task, "retry_backoff", None)
    if backoff is not None and not (isinstance(backoff, int | float) and backoff >= 0):
        raise InvalidTaskOption(f"retry_backoff must be seconds >= 0, not {backoff!r}.")
    key = getattr(task, "idempotency_key", None)
    if key is not None and not (isinstance(key, str) and 0 < len(key) <= 191):
        raise InvalidTaskOption("idempotency_key must be a string of 1 to 191 characters.")
    if key is not None and (problem := unstorable(key)):
        raise InvalidTaskOption(f"idempotency_key holds {problem}: no database stores it.")
    _check_range(task, "max_snoozes", 0, 1_000_000)
    _check_classes(task, "retry_on", allow_none=True)
    _check_classes(task, "discard_on")
    custom = getattr(task, "backoff", None)
    if custom is not None and not callable(custom):
        raise InvalidTaskOption(
            f"backoff must be a callable (exception, attempt) -> seconds or None, not {custom!r}."
        )
    if custom is not None and backoff is not None:
        raise InvalidTaskOption(
            "Set backoff (a callable) or retry_backoff (the exponential base), not both."
        )
    _check_unique(task)
    check_flow_options(task)


def _check_unique(task: Task) -> None:
    """unique_key: a template naming the function's parameters, or a callable; unique_replace."""
    spec = getattr(task, "unique_key", None)
    replace = getattr(task, "unique_replace", ())
    statuses = getattr(task, "unique_while", None)
    if spec is None and replace == () and statuses is None:
        return  # the defaults: nothing to check (every enqueue validates its task)
    check_key_template(task, "unique_key")
    if not isinstance(replace, tuple | list) or not set(replace) <= REPLACEABLE:
        raise InvalidTaskOption(
            f"unique_replace must be a tuple of 'args' and 'run_after', not {replace!r}."
        )
    known = _STATUS_VALUES
    if statuses is not None and not (
        isinstance(statuses, tuple | list)
        and statuses
        and all(isinstance(status, str) and status in known for status in statuses)
    ):
        raise InvalidTaskOption(
            "unique_while must be a non-empty tuple of job statuses "
            f"({', '.join(sorted(known))}), not {statuses!r}."
        )
    key = getattr(task, "idempotency_key", None)
    if replace and spec is None and key is None:
        raise InvalidTaskOption("unique_replace needs a unique_key (or an idempotency_key).")


def _check_classes(task: Task, name: str, *, allow_none: bool = False) -> None:
    """An exception class, or a non-empty tuple or list of them."""
    value = getattr(task, name, None)
    if (value is None and allow_none) or value == ():
        return
    items = (value,) if isinstance(value, type) else value
    if not (
        isinstance(items, tuple | list)
        and items
        and all(isinstance(item, type) and issubclass(item, BaseException) for item in items)
    ):
        raise InvalidTaskOption(
            f"{name} must be an exception class or a tuple of them, not {value!r}."
        )


def _check_range(task: Task, name: str, low: int, high: int) -> None:
    value = getattr(task, name, None)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidTaskOption(
            f"{name} must be a whole number from {low} to {high}, not {value!r}."
        )


def _traced() -> bool:
    return tracing.enabled()


def _kinds(
    calls: Sequence[TaskCall], jobs: Sequence[Job], flowing: set[int], replaceable: set[int]
) -> tuple[dict[int, Flow], list[int], set[int], list[int]]:
    """Sort a bulk's calls by how they go in: by index, flow-controlled (with their flow),
    plain, replacing (``unique_replace``), keyed."""
    # Calls of a task with flow control go in one by one, behind their key's row.
    flows = {
        i: flow
        for i, (task, args, kwargs) in enumerate(calls)
        if id(task) in flowing and (flow := flow_of(task, args, kwargs)) is not None
    }
    plain = [i for i, job in enumerate(jobs) if job.idempotency_key is None and i not in flows]
    if len(plain) == len(calls):
        return flows, plain, set(), []
    unkeyed = set(plain)
    replacing = {
        i
        for i, (task, _, _) in enumerate(calls)
        if i not in unkeyed and i not in flows and id(task) in replaceable
    }
    keyed = [
        i for i in range(len(jobs)) if i not in replacing and i not in unkeyed and i not in flows
    ]
    return flows, plain, replacing, keyed
