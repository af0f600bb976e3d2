"""Turn a task call into a job row and insert it on the caller's connection and transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Protocol

from django.db import IntegrityError, connections, transaction
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from django_skipqueue import transitions
from django_skipqueue.compat import Task
from django_skipqueue.conf import SkipQueueSettings, get_settings
from django_skipqueue.db.bulkinsert import (
    SentInsert,
    can_insert_row,
    insert_row,
    insert_rows,
    insert_rows_keyed,
    mark_inserted,
)
from django_skipqueue.db.statements import retry_whole_transaction
from django_skipqueue.exceptions import InvalidTaskOption
from django_skipqueue.models import Job, JobStatus
from django_skipqueue.payload import check_size, normalize_arguments
from django_skipqueue.states import KEYED_MASK, WAITING_STATUSES, key_mask
from django_skipqueue.tasks import call_key

#: Rows per multi-row INSERT in a bulk enqueue.
BULK_BATCH_SIZE = 1000


class Members(Protocol):
    """An open batch that collects the jobs enqueued while it is open (workflows app)."""

    batch_id: int
    using: str

    def add(self, jobs: Sequence[Job]) -> None: ...


#: The batch that jobs enqueued in this context join; set only by django_skipqueue.workflows,
#: so the core never imports it. A context variable: threads and tasks each have their own.
open_batch: ContextVar[Members | None] = ContextVar("skipqueue_open_batch", default=None)


def build_job(
    task: Task,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    config: SkipQueueSettings | None = None,
    now: datetime | None = None,
) -> Job:
    """Return an unsaved Job for this call, or raise InvalidPayload.

    A bulk enqueue passes one ``config`` and one ``now`` for all its jobs: reading the
    settings cost more than the rest of this function, and one bulk is one instant.
    """
    config = config or get_settings()
    json_args, json_kwargs = _json_arguments(args, kwargs, config)
    now = now or timezone.now()
    deferred = task.run_after is not None and task.run_after > now
    members = open_batch.get()
    values = {
        "queue_name": task.queue_name,
        "priority": task.priority,
        "status": JobStatus.SCHEDULED if deferred else JobStatus.READY,
        "run_after": task.run_after,
        "task_path": task.module_path,
        "args": json_args,
        "kwargs": json_kwargs,
        "max_attempts": _option(task, "max_attempts", config.MAX_ATTEMPTS),
        "lease_seconds": _option(task, "lease", int(config.LEASE_SECONDS)),
        "timeout_seconds": getattr(task, "timeout", None),
        "idempotency_key": call_key(task, args, kwargs),
        "key_statuses": _key_statuses(task),
        "enqueued_at": now,
        "batch_id": None if members is None else members.batch_id,
    }
    if pre_init.has_listeners(Job) or post_init.has_listeners(Job):
        return Job(**values)
    return _new_job(values)


#: A Job with every field's default, built once: :func:`_new_job` copies it.
_blank: tuple[Job, list[str]] | None = None


def _new_job(values: dict[str, Any]) -> Job:
    """``Job(**values)`` for a model with no ``pre_init``/``post_init`` receivers, quicker.

    ``Model.__init__`` looks up each of the 28 fields' defaults and sets them one by one: it
    cost more than a third of the single enqueue's own CPU. This copies a blank Job's
    attributes (fresh lists and dicts) and sets the call's values.
    """
    global _blank
    if _blank is None:
        blank = Job()
        _blank = blank, _containers(blank)
    template, containers = _blank
    job = Job.__new__(Job)
    attributes = template.__dict__.copy()
    for name in containers:
        attributes[name] = attributes[name].copy()
    attributes.update(values)
    attributes["_state"] = ModelState()
    job.__dict__ = attributes
    return job


def build_jobs(
    calls: Sequence[tuple[Task, Sequence[Any], Mapping[str, Any]]],
    *,
    config: SkipQueueSettings,
    now: datetime,
) -> list[Job]:
    """Return an unsaved Job for each call of a bulk, or raise InvalidPayload.

    Everything but the arguments depends on the task alone, so one Job is built per distinct
    task and copied for each of its calls: ``Model.__init__`` (twenty-odd fields and two
    signals) cost more than the rest of a bulk enqueue. With ``pre_init`` or ``post_init``
    receivers on Job, every job is built in full so that they see each one.
    """
    if pre_init.has_listeners(Job) or post_init.has_listeners(Job):
        return [build_job(task, a, kw, config=config, now=now) for task, a, kw in calls]
    templates: dict[int, tuple[Job, list[str]]] = {}
    jobs = []
    for task, args, kwargs in calls:
        if getattr(task, "unique_key", None) is not None:  # a key of its own per call
            jobs.append(build_job(task, args, kwargs, config=config, now=now))
            continue
        json_args, json_kwargs = _json_arguments(args, kwargs, config)
        found = templates.get(id(task))
        if found is None:
            template = build_job(task, (), {}, config=config, now=now)
            found = templates[id(task)] = (template, _containers(template))
        jobs.append(_copy_of(*found, json_args, json_kwargs))
    return jobs


def _json_arguments(
    args: Sequence[Any], kwargs: Mapping[str, Any], config: SkipQueueSettings
) -> tuple[list, dict]:
    """The call's arguments as JSON values within the size limit, or InvalidPayload."""
    json_args, json_kwargs = normalize_arguments(args, kwargs)
    check_size(json_args, json_kwargs, config.MAX_PAYLOAD_BYTES)
    return json_args, json_kwargs


def _containers(job: Job) -> list[str]:
    """The attributes of ``job`` that hold a list or a dict (besides the arguments)."""
    return [
        name
        for name, value in job.__dict__.items()
        if isinstance(value, list | dict) and name not in ("args", "kwargs")
    ]


def _copy_of(template: Job, containers: list[str], args: list, kwargs: dict) -> Job:
    """A new unsaved Job with the template's values: its own lists and dicts, these arguments."""
    job = Job.__new__(Job)
    values = template.__dict__.copy()
    for name in containers:
        values[name] = values[name].copy()
    values["_state"] = ModelState()
    values["args"] = args
    values["kwargs"] = kwargs
    job.__dict__ = values
    return job


def join_batch(jobs: Sequence[Job], using: str) -> None:
    """Hand the new jobs built inside an open batch to it (they carry its ``batch_id``)."""
    members = open_batch.get()
    if members is None or not jobs:
        return
    if using != members.using:
        raise ValueError(
            f"Batch {members.batch_id} lives in database {members.using!r}; a job enqueued "
            f"in it must use a backend of that database, not {using!r}."
        )
    members.add([job for job in jobs if job.batch_id == members.batch_id])


def _key_statuses(task: Task) -> int:
    """The statuses in which the job holds its key; ``blocked`` wherever ``ready`` is named.

    A job of a flow key waits blocked on its way to ready: if it did not hold its key there,
    a second call would insert a twin, and admitting it would meet the unique index.
    """
    statuses = getattr(task, "unique_while", None)
    if statuses is None:
        return KEYED_MASK
    if JobStatus.READY in statuses:
        statuses = (*statuses, JobStatus.BLOCKED)
    return key_mask(statuses)


def _option(task: Task, name: str, default: Any) -> Any:
    value = getattr(task, name, None)
    return default if value is None else value


def insert_job(job: Job, using: str, replace: Sequence[str] = ()) -> tuple[Job, bool]:
    """Insert ``job``; with an idempotency key, return the live job holding it instead.

    Returns the job and whether it was created. The unique index on the active key makes
    this race-free: a concurrent insert of the same key waits for the first one's
    transaction, then fails with a duplicate key, and the existing row is read back. With
    ``replace`` (the task's ``unique_replace``), a holder still waiting takes this call's
    arguments or run time (transitions 15, 16) and is returned.
    """
    if job.idempotency_key is None:
        if can_insert_row(using):
            insert_row(job, using)
        else:
            job.save(using=using, force_insert=True)
        return job, True
    return retry_whole_transaction(using, lambda: _insert_keyed(job, using, replace))


def _insert_keyed(job: Job, using: str, replace: Sequence[str]) -> tuple[Job, bool]:
    for _ in range(5):
        try:
            with transaction.atomic(using=using):
                job.save(using=using, force_insert=True)
            return job, True
        except IntegrityError:
            job.pk = None
            existing = Job.objects.using(using).filter(active_key=job.idempotency_key).first()
            if existing is None:
                continue  # the holder finished (failed or cancelled): the key is free again
            if not replace or existing.status not in WAITING_STATUSES:
                return existing, False
            if _replace(existing, job, replace):
                return existing, False
            # Claimed or promoted meanwhile: look again.
    raise IntegrityError(f"Could not insert or find a job with key {job.idempotency_key!r}.")


def _replace(holder: Job, job: Job, replace: Sequence[str]) -> bool:
    """Give the waiting ``holder`` the new call's arguments and/or run time (debounce)."""
    fields: dict[str, Any] = {}
    deferred = holder.status == JobStatus.SCHEDULED
    if "args" in replace:
        fields.update(args=job.args, kwargs=job.kwargs)
    if "run_after" in replace:
        fields["run_after"] = job.run_after
        deferred = job.status == JobStatus.SCHEDULED
    status = transitions.replace_waiting(holder, fields, deferred=deferred)
    if status is None:
        return False
    for name, value in fields.items():
        setattr(holder, name, value)
    holder.status = status
    return True


def insert_keyed_jobs(jobs: list[Job], using: str) -> list[tuple[Job, bool]]:
    """Insert keyed jobs with one ``INSERT IGNORE`` per batch; report each duplicate.

    Returns, for each job in order, the job inserted and True, or the live job that holds
    its key and False: a job that holds it already, or an earlier call of the same batch.
    Race-free as the single insert is (the unique index decides), in one transaction.
    """
    if not jobs:
        return []
    answers: list[tuple[Job, bool] | None] = [None] * len(jobs)
    with transaction.atomic(using=using):
        for start in range(0, len(jobs), BULK_BATCH_SIZE):
            batch = range(start, min(start + BULK_BATCH_SIZE, len(jobs)))
            _insert_keyed_batch(jobs, batch, using, answers)
    return [answer for answer in answers if answer is not None]


def _insert_keyed_batch(
    jobs: list[Job], batch: range, using: str, answers: list[tuple[Job, bool] | None]
) -> None:
    first: dict[str, int] = {}
    for index in batch:
        first.setdefault(jobs[index].idempotency_key or "", index)
    distinct = [jobs[index] for index in first.values()]
    if connections[using].vendor == "mysql":
        insert_rows_keyed(distinct, using)
    else:
        _insert_ignoring(distinct, using)
    skipped = [job.idempotency_key or "" for job in distinct if job.pk is None]
    holders = {
        holder.idempotency_key: holder
        for holder in Job.objects.using(using).filter(active_key__in=skipped)
    }
    missing = sorted(set(skipped) - holders.keys())
    if missing:
        raise IntegrityError(f"Jobs with keys {missing} were neither inserted nor held.")
    for index in batch:
        job = jobs[index]
        key = job.idempotency_key or ""
        if first[key] == index and job.pk is not None:
            answers[index] = (job, True)
        else:
            answers[index] = (holders.get(key) or jobs[first[key]], False)


def not_carried(error: UnicodeEncodeError, using: str) -> InvalidTaskOption:
    """The error for text of a call (a key) that the connection's character set cannot carry.

    The payload is sent as ASCII JSON, queue names and task paths are ASCII: only keys can
    hold characters a connection opened with ``OPTIONS`` ``charset`` latin1, gbk or cp932
    has no bytes for. The driver raises before anything is sent.
    """
    found = error.object[error.start : error.end]
    raw = connections[using].connection
    charset = raw.character_set_name() if hasattr(raw, "character_set_name") else error.encoding
    return InvalidTaskOption(
        f"The connection of database {using!r} (character set {charset!r}) cannot "
        f"carry {found!r}, in a key of this call: nothing was inserted. Use keys that "
        "character set has, or open the connection with utf8mb4 (Django's default)."
    )


def _insert_ignoring(jobs: list[Job], using: str) -> None:
    """PostgreSQL and SQLite: ``ON CONFLICT DO NOTHING`` (``OR IGNORE``) ... ``RETURNING``."""
    from django.db.models.constants import OnConflict

    fields = [f for f in Job._meta.concrete_fields if not f.primary_key and not f.generated]
    returning = [Job._meta.pk, Job._meta.get_field("idempotency_key")]
    rows = Job.objects.using(using)._insert(
        jobs, fields, returning_fields=returning, on_conflict=OnConflict.IGNORE
    )
    mark_inserted(jobs, {key: pk for pk, key in rows}, using)


def insert_calls_sent_ahead(
    calls: Sequence[tuple[Task, Sequence[Any], Mapping[str, Any]]],
    using: str,
    *,
    config: SkipQueueSettings,
    now: datetime,
    inserted: Callable[[Sequence[Job], Sequence[tuple[Task, Any, Any]]], None],
) -> list[Job]:
    """Build and insert plain calls (no key, no flow) a chunk at a time, in one transaction.

    Each chunk is built while the server inserts the one before (see ``SentInsert``), and
    ``inserted(jobs, calls)`` is called for a chunk while the server inserts the next one.
    A call refused while building (its payload) raises after earlier chunks went in: the
    transaction then rolls them back, so a bulk still inserts all of its calls or none.
    Check :func:`can_send_ahead` first.
    """
    jobs: list[Job] = []
    sent: tuple[SentInsert, Sequence[Any]] | None = None  # the chunk in flight, and its calls
    with transaction.atomic(using=using):
        try:
            for start in range(0, len(calls), BULK_BATCH_SIZE):
                chunk = calls[start : start + BULK_BATCH_SIZE]
                built = build_jobs(chunk, config=config, now=now)  # while the last goes in
                previous, sent = sent, None
                if previous is not None:
                    previous_jobs = previous[0].finish()
                sent = (SentInsert(built, using), chunk)
                jobs.extend(built)
                if previous is not None:
                    inserted(previous_jobs, previous[1])  # while this chunk goes in
            if sent is not None:
                (last, last_calls), sent = sent, None
                inserted(last.finish(), last_calls)
        except BaseException:
            if sent is not None:
                sent[0].discard()
            raise
    return jobs


def insert_jobs(jobs: list[Job], using: str) -> list[Job]:
    """Insert many jobs with multi-row INSERTs, setting each job's primary key."""
    if connections[using].vendor != "mysql":
        return Job.objects.using(using).bulk_create(jobs, batch_size=BULK_BATCH_SIZE)
    with transaction.atomic(using=using):
        for start in range(0, len(jobs), BULK_BATCH_SIZE):
            insert_rows(jobs[start : start + BULK_BATCH_SIZE], using)
    return jobs
