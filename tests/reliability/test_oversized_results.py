"""Acceptance: a task's oversized return value costs its own job alone (issue 34, defect 3).

Real worker processes on the real MariaDB (max_allowed_packet 16 MiB): a result larger than
the server's packet used to fail the batched success UPDATE again and again, the loop taking
it for an outage while its heartbeats kept every held lease alive.
"""

from __future__ import annotations

import json

import pytest

from django_skipqueue.models import Job
from tests.support import result_tasks as rt
from tests.support.workers import Runworkers, status_counts

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]


def run_burst(manage_py, child_env, log, settings, *args):
    env = {
        **child_env,
        "DJANGO_SETTINGS_MODULE": "tests.reliability.settings",
        "RELIABILITY_SETTINGS": json.dumps(settings),
    }
    workers = Runworkers(manage_py, env, log, "--burst", "--queues", "default", *args)
    try:
        code = workers.wait(timeout=60)
    finally:
        workers.stop()
    return code, workers.log()


def last_error(job_id):
    return Job.objects.get(pk=job_id).errors[-1]


def test_an_oversized_result_fails_its_own_job_and_the_batch_goes_on(
    backend, child_env, manage_py, tmp_path
):
    big = rt.big_result.enqueue(20_000_000)
    innocent = rt.small_result.enqueue("innocent", 0.05)
    later = backend.enqueue_many([(rt.small_result, ["later"], {})] * 20)
    code, log = run_burst(manage_py, child_env, tmp_path / "big.log", {}, "--threads", "2")
    assert code == 0, log[-3000:]

    job = Job.objects.get(pk=big.id)
    assert (job.status, job.attempts, job.return_value) == ("failed", 1, None)  # not retried
    error = last_error(big.id)
    assert error["exception_class_path"] == "django_skipqueue.exceptions.ResultTooLarge"
    assert "20,000,002 bytes of JSON" in error["traceback"]
    assert "SKIPQUEUE_MAX_RESULT_BYTES" in error["traceback"]
    assert Job.objects.get(pk=innocent.id).return_value == "innocent"
    assert status_counts() == {"succeeded": 21, "failed": 1}
    assert all(r.id for r in later)
    assert "database unreachable" not in log


def test_a_bound_above_the_servers_packet_is_lowered_to_fit_it(
    backend, child_env, manage_py, tmp_path
):
    """SKIPQUEUE_MAX_RESULT_BYTES at 64 MiB, the server's packet at 16 MiB: the worker says
    so at start-up and bounds results by what one statement can carry."""
    big = rt.big_result.enqueue(12_000_000)
    innocent = rt.small_result.enqueue("innocent")
    settings = {"SKIPQUEUE_MAX_RESULT_BYTES": 64 * 1024 * 1024}
    code, log = run_burst(manage_py, child_env, tmp_path / "bound.log", settings)
    assert code == 0, log[-3000:]
    assert "max_allowed_packet" in log and "results are bounded at" in log
    assert Job.objects.get(pk=big.id).status == "failed"
    assert last_error(big.id)["exception_class_path"].endswith("ResultTooLarge")
    assert Job.objects.get(pk=innocent.id).status == "succeeded"


def test_a_batch_too_large_for_one_statement_is_recorded_row_by_row(
    backend, child_env, manage_py, tmp_path
):
    """Two results within the bound whose one UPDATE exceeds the server's packet: each is
    written in a statement of its own, and both succeed.

    One thread claims the five jobs at once (1 + --prefetch 4). While the jobs claimed ahead
    wait, a finished outcome waits for a second one (half of --prefetch), and no claim can
    come first (every slot is held): the two quoted results are written as one batch.
    """
    sizes = (2_500_000, 2_500_001)  # different: a value shared by a batch is sent once
    quoted = backend.enqueue_many([(rt.quoted_result, [n], {}) for n in sizes])
    innocent = backend.enqueue_many([(rt.small_result, ["innocent"], {})] * 3)
    settings = {"SKIPQUEUE_MAX_RESULT_BYTES": 6_000_000, "SKIPQUEUE_PREFETCH_MAX_WAIT": 4.0}
    code, log = run_burst(
        manage_py, child_env, tmp_path / "batch.log", settings,
        "--threads", "1", "--prefetch", "4",
    )  # fmt: skip
    assert code == 0, log[-3000:]
    assert status_counts() == {"succeeded": 5}
    for result, n in zip(quoted, sizes, strict=True):
        assert Job.objects.get(pk=result.id).return_value == '"' * n
    for result in innocent:
        assert Job.objects.get(pk=result.id).return_value == "innocent"
    assert "recorded one by one" in log
