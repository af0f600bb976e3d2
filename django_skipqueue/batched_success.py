"""The batched success (5): one fenced UPDATE for many jobs of one owner, and its read-back.

SQL only, below ``transitions.py``, whose ``succeed_many()`` runs it with what must follow in
the same transaction (outcome listeners, flow slots). The UPDATE is built with the ORM and
compiled once per padded batch size (db/statements.py): a row is written only while it is
claimed by this owner at the attempt the worker ran (``(id = a AND attempts = x) OR ...``).
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
from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus


def statement(
    jobs: Sequence[Job], return_values: Sequence[Any]
) -> tuple[statements.Statement, list[Any]]:
    using = jobs[0]._state.db or "default"
    owner = jobs[0].owner
    if any(job.owner != owner for job in jobs):
        raise ValueError("succeed_many() records the jobs of one owner at a time.")
    same = uniform(jobs, return_values)
    # The usual batch: every job returned the same value on its first attempt. Plain
    # assignments then, instead of a CASE per row that MySQL evaluates for every row.
    # Compiled for a few batch sizes; a batch is padded with its last job (statements.py).
    size = statements.padded_size(len(jobs))
    key = ("succeed-many-same" if same else "succeed-many", size)
    statement = statements.cached(using, key, lambda: _compile(size, same=same))
    values: list[Any] = [owner]
    padded = zip(
        statements.padded(jobs, size), statements.padded(return_values, size), strict=True
    )
    for job, return_value in padded:
        values += [job.pk, job.attempts, return_value, [*job.worker_ids, job.owner]]
    return statement, values


def uniform(jobs: Sequence[Job], return_values: Sequence[Any]) -> bool:
    """Tell whether every job gets the same return value and the same worker ids."""
    first_value = return_values[0]
    first_ids = jobs[0].worker_ids
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
    rows = Job.objects.filter(fence, status=JobStatus.CLAIMED, owner=slot_str(0))
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


def written(jobs: Sequence[Job], using: str) -> list[bool]:
    """Tell which jobs the UPDATE wrote: succeeded under this owner at this attempt."""
    done = committed_successes(jobs, using)
    return [job.pk in done for job in jobs]


def committed_successes(
    jobs: Sequence[Job], using: str, *fields: str
) -> dict[int, dict[str, Any]]:
    """Return, by id, the jobs whose success (5) at this very owner and attempt is written.

    The one answer to "did my success commit?": after the fence rejected rows of a batch,
    after a connection broke during COMMIT (which may have happened all the same). A row
    taken over since (another owner, a later attempt) is not ours. ``fields``: columns to
    read back with it (``return_value``).
    """
    rows = Job.objects.using(using).filter(
        pk__in=[job.pk for job in jobs],
        owner__in={job.owner for job in jobs},
        status=JobStatus.SUCCEEDED,
    )
    found = {row["pk"]: row for row in rows.values("pk", "owner", "attempts", *fields)}
    return {
        job.pk: found[job.pk]
        for job in jobs
        if job.pk in found
        and (found[job.pk]["owner"], found[job.pk]["attempts"]) == (job.owner, job.attempts)
    }
