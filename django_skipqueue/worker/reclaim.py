"""Take back the jobs of a worker process that died: spend the attempts it had begun only.

Its supervisor calls :func:`reclaim` after ``waitpid``, with the ids of the held jobs that
had started, read from the memory the two share (worker/started.py). Each UPDATE is fenced on
the dead owner and the job's attempt, so a job another process took meanwhile is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from functools import partial

from django_skipqueue import transitions, wakeup
from django_skipqueue.db.statements import retry_whole_transaction
from django_skipqueue.exceptions import WorkerDied, message_record
from django_skipqueue.models import Job
from django_skipqueue.states import Ending, JobStatus, next_step

logger = logging.getLogger("django_skipqueue.outcomes")


def reclaim(
    owner: str, using: str, reason: str, started: Collection[int] | None = None
) -> list[Job]:
    """Take back every job a dead worker process held; return the jobs taken.

    The attempt of a job that had started is spent (the job may be what killed the process,
    and may have done part of its work), so a job that keeps killing its process ends
    ``failed`` after ``max_attempts``; the others are ready again at once (a backoff of 0).
    ``started`` holds the ids of the held jobs that had started (the process's StartedLog):
    the others, claimed ahead or never begun, go back without spending their attempt. None
    (not known) spends the attempt of every one. Each UPDATE is fenced on the dead owner and
    its attempt.
    """
    held = list(Job.objects.using(using).held_by(owner))
    if started is not None:
        unstarted = [job for job in held if job.pk not in started]
        held = [job for job in held if job.pk in started]
        return _give_back_unstarted(unstarted, owner, reason) + _spend(held, owner, reason)
    return _spend(held, owner, reason)


def _give_back_unstarted(jobs: list[Job], owner: str, reason: str) -> list[Job]:
    """Give back, their attempt not spent, the jobs a dead process held but never began."""
    if not jobs:
        return []
    using = jobs[0]._state.db or "default"
    release = partial(retry_whole_transaction, using)
    taken = [job for job in jobs if release(partial(transitions.release, job))]
    wakeup.after_commit(using, {job.queue_name for job in taken})
    for job in taken:
        logger.info(
            "job=%s task=%s queue=%s attempt=%s status=ready worker=%s reason=%s started=no",
            job.pk,
            job.task_path,
            job.queue_name,
            job.attempts,
            owner,
            reason,
        )
    return taken


def _spend(held: list[Job], owner: str, reason: str) -> list[Job]:
    """Take back the jobs a dead process had begun: their attempt is spent (WorkerDied)."""
    if not held:
        return []
    using = held[0]._state.db or "default"
    steps = {
        # A job of a flow key waits for its key's admission (21), which wakes its queue.
        job.pk: next_step(job.attempts, job.max_attempts, 0, flow_key=job.flow_key)
        for job in held
    }
    taken = [job for job in held if _reclaim_one(job, reason, steps[job.pk])]
    wakeup.after_commit(
        using, {job.queue_name for job in taken if steps[job.pk].status == JobStatus.READY}
    )
    for job in taken:
        logger.warning(
            "job=%s task=%s queue=%s attempt=%s status=%s worker=%s reason=%s",
            job.pk,
            job.task_path,
            job.queue_name,
            job.attempts,
            steps[job.pk].status,
            owner,
            reason,
        )
    return taken


def _reclaim_one(job: Job, reason: str, step: Ending) -> bool:
    error = message_record(
        WorkerDied, f"Worker {job.owner} died ({reason}) during attempt {job.attempts}."
    )
    return retry_whole_transaction(
        job._state.db or "default", lambda: transitions.end_attempt(job, error, step)
    )
