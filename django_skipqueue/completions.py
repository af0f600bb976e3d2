"""Many successes, one fenced UPDATE: the batched form of ``transitions.succeed``.

A worker finishing a batch of jobs used to send one UPDATE per job. This sends one per
batch, still fenced per row: a row is written only while it is claimed by this owner
at the attempt the worker ran (``(id = a AND attempts = x) OR (id = b AND ...)``), so a
lost lease changes nothing, exactly as with the single transition.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Case, JSONField, Q, Value, When
from django.db.models.functions import Cast

from django_skipqueue.db import statements
from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.db.statements import slot_int, slot_json, slot_str
from django_skipqueue.managers import CLAIMED
from django_skipqueue.models import Job, JobStatus


def succeed_many(jobs: Sequence[Job], return_values: Sequence[Any]) -> list[bool]:
    """Record the success of ``jobs`` (one owner); return, per job, whether it was written.

    Run it inside a transaction: if the fence rejected some rows, the rows this owner has
    just marked are still locked by this transaction, so reading them back is exact.
    """
    if not jobs:
        return []
    using, owner = jobs[0]._state.db or "default", jobs[0].owner
    if any(job.owner != owner for job in jobs):
        raise ValueError("succeed_many() records the jobs of one owner at a time.")
    if _uniform(jobs, return_values):
        # The usual batch: every job returned the same value on its first attempt. Plain
        # assignments then, instead of a CASE per row that MySQL evaluates for every row.
        key, build = ("succeed-many-same", len(jobs)), lambda: _compile(len(jobs), same=True)
    else:
        key, build = ("succeed-many", len(jobs)), lambda: _compile(len(jobs), same=False)
    statement = statements.cached(using, key, build)
    values: list[Any] = [owner]
    for job, return_value in zip(jobs, return_values, strict=True):
        values += [job.pk, job.attempts, return_value, [*job.worker_ids, job.owner]]
    if statements.execute(using, statement, values) == len(jobs):
        return [True] * len(jobs)
    return _written(jobs, using)


def _uniform(jobs: Sequence[Job], return_values: Sequence[Any]) -> bool:
    """Tell whether every job gets the same return value and the same worker ids."""
    first_value, first_ids = return_values[0], jobs[0].worker_ids
    return all(
        job.worker_ids == first_ids and _same_json(value, first_value)
        for job, value in zip(jobs, return_values, strict=True)
    )


def _same_json(value: Any, other: Any) -> bool:
    # Python says 1 == True == 1.0; JSON does not.
    return type(value) is type(other) and (
        value is other or json.dumps(value) == json.dumps(other)
    )


def _compile(count: int, *, same: bool) -> statements.Statement:
    """Build the UPDATE for ``count`` jobs with the ORM; slot 0 is the owner, then 4 per job."""
    ids = [slot_int(1 + 4 * i) for i in range(count)]
    fence = reduce(or_, (Q(pk=pk, attempts=slot_int(2 + 4 * i)) for i, pk in enumerate(ids)))
    rows = Job.objects.filter(fence, status=CLAIMED, owner=slot_str(0))
    fields = {
        "status": JobStatus.SUCCEEDED,
        "return_value": _json(3) if same else _per_row(ids, 3),
        "worker_ids": _json(4) if same else _per_row(ids, 4),
        "lease_until": None,
        "finished_at": DatabaseNow(),
    }
    # In the uniform statement the first job's values stand for every job's.
    unused = [slot for i in range(1, count) for slot in (3 + 4 * i, 4 + 4 * i)] if same else []
    return statements.compile_update(rows, fields, 1 + 4 * count, unused=unused)


def _json(slot: int) -> Cast:
    return Cast(Value(slot_json(slot)), JSONField())


def _per_row(ids: list[int], offset: int) -> Case:
    """CASE id WHEN ... THEN <this job's JSON value> END, for one JSON column."""
    whens = [
        When(pk=pk, then=Cast(Value(slot_json(offset + 4 * i)), JSONField()))
        for i, pk in enumerate(ids)
    ]
    return Case(*whens, output_field=JSONField())


def _written(jobs: Sequence[Job], using: str) -> list[bool]:
    """Tell which jobs the UPDATE wrote: succeeded under this owner at this attempt."""
    rows = Job.objects.using(using).filter(
        pk__in=[job.pk for job in jobs], owner=jobs[0].owner, status=JobStatus.SUCCEEDED
    )
    done = set(rows.values_list("pk", "attempts"))
    return [(job.pk, job.attempts) in done for job in jobs]
