"""Rows are data, at the worker too: hostile or broken rows fail cleanly and run nothing.

tests/backend/test_security.py proves task resolution (only Task objects, only the module the path
names is imported), queue-name validation and parameter binding, and JSON storage;
tests/backend/test_enqueue.py refuses oversized and non-JSON payloads at enqueue. Here rows written
behind the backend's back (by SQL, an attacker with write access to the table, or a bad
migration) go through a real ``runworkers`` process: nothing they name is called, a pickle in
a payload stays a string, broken rows end ``failed`` with a clear error, the worker survives
and the other jobs run.
"""

from __future__ import annotations

import base64
import pickle

import pytest

from django_skipqueue.models import Job
from tests.reliability.procs import MANAGE, Supervisor
from tests.support.tasks import echo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]


class Touch:
    """Unpickling this creates a file: proof that a payload was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def hostile_row(path: str, args: list | dict, kwargs: dict | list | None = None) -> Job:
    job = Job.objects.get(pk=echo.using(max_attempts=1).enqueue().id)
    Job.objects.filter(pk=job.pk).update(task_path=path, args=args, kwargs=kwargs or {})
    return job


def test_hostile_and_broken_rows_fail_without_running_anything(rel_env, tmp_path, figures):
    proof = tmp_path / "pwned"
    pickled = base64.b64encode(pickle.dumps(Touch(str(proof)))).decode()
    hostile = {
        "os.system": hostile_row("os.system", [f"touch {proof}"]),
        "subprocess.getoutput": hostile_row("subprocess.getoutput", [f"touch {proof}"]),
        "builtins.exec": hostile_row("builtins.exec", [f"open({str(proof)!r}, 'w')"]),
        "pickle.loads": hostile_row("pickle.loads", [pickled]),
        "not a path": hostile_row("__import__('os').system('id')", []),
        "a package attribute": hostile_row("tests.reliability.sidefx_touch", []),
    }
    broken = {
        "args as an object": hostile_row("tests.support.tasks.echo", {"a": 1}, {}),
        "kwargs as a list": hostile_row("tests.support.tasks.echo", [], [1, 2]),
    }
    carried = echo.enqueue(pickled, key=pickled)
    hostile_queue = Job.objects.get(pk=echo.enqueue().id)
    Job.objects.filter(pk=hostile_queue.pk).update(queue_name="x' OR '1'='1")

    env = rel_env()
    env["SKIPQUEUE_SIDEFX_FILE"] = str(proof)
    supervisor = Supervisor(
        env, tmp_path / "runworkers.log", "--burst", "--processes", "1", "--threads", "2"
    )
    assert supervisor.wait(timeout=120) == 0, supervisor.log()[-3000:]

    rows = {name: Job.objects.get(pk=job.pk) for name, job in {**hostile, **broken}.items()}
    figures.update({name: _error(job) for name, job in rows.items()})
    assert not proof.exists(), "a hostile row ran something"
    for name in hostile:
        assert rows[name].status == "failed", name
        assert _error(rows[name]) == "TaskNotFound", name
        assert (
            "not a Task" in rows[name].errors[0]["traceback"]
            or "not a dotted path" in (rows[name].errors[0]["traceback"])
            or "names nothing" in rows[name].errors[0]["traceback"]
            or "outside the project's packages" in rows[name].errors[0]["traceback"]
        ), name
    for name in broken:
        # Failed once, not retried: a stored row's arguments do not change on the next try.
        assert (rows[name].status, _error(rows[name])) == ("failed", "InvalidStoredPayload"), name
        assert rows[name].attempts == 1, name
    carried_job = Job.objects.get(pk=carried.id)
    assert carried_job.status == "succeeded"
    assert carried_job.return_value == {"args": [pickled], "kwargs": {"key": pickled}}
    assert Job.objects.get(pk=hostile_queue.pk).status == "ready", "claimed from no queue"


def test_a_hostile_queue_name_is_refused_by_runworkers(rel_env):
    import subprocess

    done = subprocess.run(
        [*MANAGE, "runworkers", "--burst", "--queues", "x' OR '1'='1"],
        env=rel_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "Unknown queue" in done.stderr


def _error(job: Job) -> str:
    return job.errors[-1]["exception_class_path"].rpartition(".")[2] if job.errors else ""
