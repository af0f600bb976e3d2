"""Audit a run from the database alone: jobs lost, executions, duplicates and their causes.

The demo ``record`` task (and the test tasks built like it) writes one ledger row per execution
with the job id, the attempt and the worker that ran it. A job executed twice has two rows. The
promise is that this only happens after a lease was lost, and on a higher attempt: every row
but the one of the attempt that finished the job must belong to an attempt whose owner died
(``WorkerDied``, written by the supervisor) or whose lease expired (``LeaseExpired``, written by
the reaper), and whose error names that owner.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

LOST_LEASE_ERRORS = ("WorkerDied", "LeaseExpired", "WorkerStopped")
FINAL = ("succeeded", "failed", "cancelled")


@dataclass
class JobRow:
    id: int
    status: str
    attempts: int
    worker_ids: list[str]
    errors: list[dict[str, str]]


@dataclass
class Audit:
    """What the tables say about a run."""

    enqueued: int = 0
    succeeded: int = 0
    failed: int = 0
    #: Jobs that never reached a final state, or that were enqueued but have no row at all.
    lost: int = 0
    #: Ledger rows: executions that wrote their effect.
    executions: int = 0
    #: Executions beyond the first per job.
    duplicates: int = 0
    #: Jobs executed more than once.
    duplicated_jobs: int = 0
    #: Duplicates explained by a dead owner / an expired lease, per error class.
    causes: dict[str, int] = field(default_factory=dict)
    #: Jobs that needed more than one attempt, and the errors their attempts ended with.
    reattempted: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    #: Problems found: unexplained duplicates, same attempt twice, succeeded without a row.
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "enqueued": self.enqueued,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "lost": self.lost,
            "executions": self.executions,
            "duplicates": self.duplicates,
            "duplicated_jobs": self.duplicated_jobs,
            "causes": dict(self.causes),
            "reattempted": self.reattempted,
            "errors": dict(self.errors),
            "problems": self.problems[:20],
        }


def job_rows(raw: Iterable[Sequence[Any]]) -> list[JobRow]:
    """Build JobRows from (id, status, attempts, worker_ids, errors) tuples."""
    return [
        JobRow(int(pk), status, int(attempts), _json(worker_ids), _json(errors))
        for pk, status, attempts, worker_ids, errors in raw
    ]


def audit(
    jobs: Sequence[JobRow],
    ledger: Iterable[tuple[int, int, str]],
    *,
    expected_ids: Iterable[int] | None = None,
    killed_owners: set[str] | None = None,
    effects_once: bool = False,
    task_errors: bool = False,
) -> Audit:
    """Check every job and ledger row.

    ``effects_once``: any duplicate is a problem (transactional tasks). ``task_errors``: a
    duplicate may also follow an attempt that failed with an error of its own, such as a
    database outage that hid whether the task's write had committed (retried by design).
    """
    result = Audit(enqueued=len(jobs))
    by_job: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for job_id, attempt, worker in ledger:
        by_job[int(job_id)].append((int(attempt), worker))
        result.executions += 1
    known = {job.id for job in jobs}
    if expected_ids is not None:
        missing = set(expected_ids) - known
        result.lost += len(missing)
        result.problems += [f"job {pk} has no row" for pk in sorted(missing)[:5]]
    for job in jobs:
        rows = sorted(by_job.get(job.id, []))
        _check_job(job, rows, result, killed_owners, effects_once, task_errors)
    return result


def _check_job(
    job: JobRow,
    rows: list[tuple[int, str]],
    result: Audit,
    killed_owners: set[str] | None,
    effects_once: bool,
    task_errors: bool,
) -> None:
    if job.status not in FINAL:
        result.lost += 1
        result.problems.append(f"job {job.id} ended {job.status}")
        return
    result.reattempted += job.attempts > 1
    for error in job.errors:
        name = error.get("exception_class_path", "?").rpartition(".")[2]
        result.errors[name] = result.errors.get(name, 0) + 1
    result.succeeded += job.status == "succeeded"
    result.failed += job.status == "failed"
    if job.status == "succeeded" and not rows:
        result.problems.append(f"job {job.id} succeeded without an execution")
    attempts = [attempt for attempt, _ in rows]
    if len(set(attempts)) != len(attempts):
        result.problems.append(f"job {job.id} ran attempt {attempts} twice")
    if len(rows) <= 1:
        return
    result.duplicates += len(rows) - 1
    result.duplicated_jobs += 1
    if effects_once:
        result.problems.append(f"job {job.id}: {len(rows)} effects of a transactional task")
    for attempt, worker in rows:
        if job.status == "succeeded" and attempt == job.attempts:
            continue  # the execution that finished the job
        cause = _lost_lease_cause(job, worker, killed_owners)
        if cause is None and task_errors and attempt <= len(job.errors):
            cause = job.errors[attempt - 1]["exception_class_path"].rpartition(".")[2]
        if cause is None:
            result.problems.append(f"job {job.id}: attempt {attempt} by {worker} unexplained")
        else:
            result.causes[cause] = result.causes.get(cause, 0) + 1


def _lost_lease_cause(job: JobRow, worker: str, killed: set[str] | None) -> str | None:
    """Return the error class that took this worker's lease away, if the job records one."""
    for error in job.errors:
        name = error.get("exception_class_path", "").rpartition(".")[2]
        if name in LOST_LEASE_ERRORS and worker in error.get("traceback", ""):
            if name == "WorkerDied" and killed is not None and worker not in killed:
                return None
            return name
    return None


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value
