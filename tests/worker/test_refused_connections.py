"""A job thread refused a connection gives its job back unstarted once refusals have begun.

A real ``runworkers --burst`` runs as a database account limited by ``MAX_USER_CONNECTIONS``
to fewer connections than its threads need, so one job thread is refused (error 1226) while
another holds its connection and drains (on a busy machine the threads' connections may not
overlap in a run; the run is then tried again, up to RUNS times). The first refusal costs the
job an attempt (the task itself met it); every later one must give the job back without
spending one, or jobs of two attempts would fail for good on a server that is only full.
"First" is per process: job threads refused at the same moment, before any of them has
reported, each spend one (at most THREADS in a run).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.db import connection

from django_skipqueue.models import Job
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.workers import Runworkers

pytestmark = [pytest.mark.mysql, pytest.mark.django_db(transaction=True)]

JOBS = 12
#: Job threads of the worker process: at most this many refusals can spend an attempt.
THREADS = 2


@pytest.fixture
def limited_account(test_database_url: str):
    """An account of the test database allowed ``limit`` connections; yields a URL maker."""
    if connection.vendor != "mysql":
        pytest.skip("MAX_USER_CONNECTIONS is MySQL and MariaDB's")
    user = f"skq_budget_{uuid.uuid4().hex[:8]}"
    made: list[str] = []

    def make(limit: int) -> str:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE USER '{user}'@'%' WITH MAX_USER_CONNECTIONS {limit}")
            made.append(user)
            cursor.execute(f"GRANT ALL ON `{connection.settings_dict['NAME']}`.* TO '{user}'@'%'")
        scheme, rest = test_database_url.split("://", 1)
        return f"{scheme}://{user}@{rest.split('@', 1)[1]}"

    yield make
    with connection.cursor() as cursor:
        for name in made:
            cursor.execute(f"DROP USER IF EXISTS '{name}'@'%'")


#: Runs tried at most: a run in which no job thread happened to be refused proves nothing.
RUNS = 3


def test_a_refused_job_thread_gives_its_job_back_without_spending_an_attempt(
    manage_py, child_env, limited_account, tmp_path
):
    # The worker loop's connection, the heartbeat's and one job thread's: the second job
    # thread is refused while the first keeps its connection between jobs. On a busy machine
    # the threads' connections may never overlap in a run (no refusal at all: every job
    # succeeds on its first attempt, which proves nothing): the run is then tried again.
    env = {**child_env, "DATABASE_URL": limited_account(3)}
    env["SKIPQUEUE_RETRY_BACKOFF"] = "0"
    runs = []
    for run in range(RUNS):
        given_back, refusals_spent = drain_once(manage_py, env, tmp_path / f"workers-{run}.log")
        runs.append(f"given_back={given_back} spent={refusals_spent}")
        assert refusals_spent <= THREADS, "refusals after the first spent attempts: " + runs[-1]
        if given_back or refusals_spent:
            break
    assert given_back >= 1, "the refused thread never connected first: " + "; ".join(runs)


def drain_once(manage_py: list[str], env: dict[str, str], log_path: Path) -> tuple[int, int]:
    """Drain JOBS jobs with a burst run; return its give-backs and the attempts refusals spent."""
    results = [wt.record_then_sleep.enqueue(seconds=0.2) for _ in range(JOBS)]
    ledger_before = LedgerEntry.objects.count()
    workers = Runworkers(
        manage_py, env, log_path, "--burst", "--threads", str(THREADS), "--prefetch", "0"
    )
    try:
        assert workers.wait(timeout=180) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    log = workers.log()
    jobs = list(Job.objects.filter(pk__in=[r.id for r in results]))
    statuses = sorted({job.status for job in jobs})
    refusals_spent = sum(
        1 for job in jobs for error in job.errors if "OperationalError" in str(error)
    )
    given_back = len(re.findall(r"status=refused", log))
    figures = f"statuses={statuses} spent={refusals_spent} given_back={given_back}"
    assert statuses == ["succeeded"], figures + "\n" + log[-3000:]
    assert LedgerEntry.objects.count() - ledger_before == JOBS, figures
    return given_back, refusals_spent
