"""A stored task path never imports a module outside the project's packages, at the worker.

Importing a module runs it: a row naming ``this.x`` used to print the Zen of Python in the
worker before the check that ``x`` is a Task refused it. Job rows, batch callbacks and chain
steps written behind the backend's back name ``this`` and a stand-in for ``antigravity`` (it
creates a marker file when imported); a real ``runworkers --burst`` fails each with
TaskNotFound, imports neither, and runs the ordinary jobs beside them. The lookup's rule
itself is proved in-process below.
"""

from __future__ import annotations

import os
import sys

import pytest
from django.test import override_settings

from django_skipqueue.context import resolve_task, task_packages
from django_skipqueue.exceptions import TaskNotFound
from django_skipqueue.models import Job
from django_skipqueue.setting_checks import check_settings
from django_skipqueue.workflows import batch, chain, step
from django_skipqueue.workflows.models import Batch
from tests.reliability.procs import Supervisor
from tests.support.hostile_modules import HOSTILE_PATHS, ZEN, plant, planted
from tests.support.tasks import echo

REFUSED = "outside the project's packages"
#: The stand-in module (it creates a marker file when imported) each kind of row names.
STAND_INS = {
    "job row": "antigravity",
    "batch callback": "skipqueue_callback_standin",
    "chain step": "skipqueue_step_standin",
}


def forged(path: str) -> Job:
    """An ordinary job whose row is then made to name ``path``."""
    job = Job.objects.get(pk=echo.using(max_attempts=1).enqueue().id)
    Job.objects.filter(pk=job.pk).update(task_path=path)
    return job


def forged_batch(on_success: str, on_finish: str) -> Batch:
    with batch(on_success=echo, on_finish=echo) as opened:
        echo.enqueue("member")
    Batch.objects.filter(pk=opened.batch_id).update(on_success=on_success, on_finish=on_finish)
    return Batch.objects.get(pk=opened.batch_id)


@pytest.mark.mysql
@pytest.mark.django_db(transaction=True)
def test_the_worker_refuses_paths_outside_the_project_without_importing(rel_env, tmp_path):
    # A stand-in of its own per kind of row, so that each marker tells which lookup imported.
    markers = {kind: plant(tmp_path, name) for kind, name in STAND_INS.items()}
    jobs = {path: forged(path) for path in HOSTILE_PATHS}
    callbacks = forged_batch("this.x", "skipqueue_callback_standin.x")
    steps = chain(step(echo, "first"), step(echo))
    Batch.objects.filter(pk=steps.pk).update(
        steps=[{"task_path": "skipqueue_step_standin.y", "args": [], "kwargs": {}}]
    )
    ordinary = echo.enqueue("beside")

    env = rel_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    supervisor = Supervisor(env, tmp_path / "runworkers.log", "--burst", "--processes", "1")
    assert supervisor.wait(timeout=120) == 0, supervisor.log()[-3000:]

    for kind, marker in markers.items():
        assert not marker.exists(), f"the worker imported the module a {kind} names"
    assert ZEN not in supervisor.log(), "the worker imported this"
    for path, job in jobs.items():
        job.refresh_from_db()
        error = job.errors[-1]
        assert (job.status, error["exception_class_path"].rpartition(".")[2]) == (
            "failed",
            "TaskNotFound",
        ), path
        assert REFUSED in error["traceback"], error["traceback"]
    callbacks.refresh_from_db()
    assert callbacks.finished_at is not None
    assert (callbacks.success_job_id, callbacks.finish_job_id) == (None, None)
    for path in ("this.x", "skipqueue_callback_standin.x"):
        assert f"{path}: TaskNotFound: Task path {path!r} is {REFUSED}" in callbacks.callback_error
    steps.refresh_from_db()
    assert (steps.succeeded, steps.failed) == (1, 1)
    path = "skipqueue_step_standin.y"
    assert f"{path}: TaskNotFound: Task path {path!r} is {REFUSED}" in steps.callback_error
    assert Job.objects.get(pk=ordinary.id).status == "succeeded"


# The rule, in this process.


@pytest.mark.parametrize("path", [*HOSTILE_PATHS, "subprocess.x.y", "no_such_module.task"])
def test_a_module_outside_the_project_is_refused_and_not_imported(tmp_path, path):
    with planted(tmp_path) as marker:
        with pytest.raises(TaskNotFound) as refused:
            resolve_task(path)
        assert not marker.exists()
        assert path.rpartition(".")[0] not in sys.modules
        assert REFUSED in str(refused.value)


def test_a_module_already_imported_is_looked_in_without_importing():
    with pytest.raises(TaskNotFound, match="names a builtin_function_or_method, not a Task"):
        resolve_task("os.system")


def test_installed_apps_the_settings_package_and_the_setting_are_the_project():
    packages = task_packages()
    assert {"django_skipqueue.workflows", "testproject.demo", "testproject", "tests"} <= set(
        packages
    )
    assert resolve_task("testproject.demo.tasks.add").module_path == "testproject.demo.tasks.add"


def test_a_package_listed_in_the_setting_is_imported(tmp_path):
    package = tmp_path / "shared_jobs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text(
        "from django_skipqueue.tasks import task\n\n@task()\ndef ping() -> str:\n"
        "    return 'pong'\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(TaskNotFound, match=REFUSED):
            resolve_task("shared_jobs.jobs.ping")
        assert "shared_jobs" not in sys.modules
        with override_settings(SKIPQUEUE_TASK_MODULES=["shared_jobs.jobs"]):
            assert resolve_task("shared_jobs.jobs.ping").call() == "pong"
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("shared_jobs.jobs", "shared_jobs"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize("value", ["tests", ["tests", "bad name"], ["tests."], [None]])
def test_the_setting_must_list_dotted_module_names(value):
    with override_settings(SKIPQUEUE_TASK_MODULES=value):
        errors = [error for error in check_settings() if "TASK_MODULES" in error.msg]
    assert [error.id for error in errors] == ["django_skipqueue.E008"]
    assert "must be a list of dotted module names" in errors[0].msg


def test_a_list_of_dotted_names_passes():
    with override_settings(SKIPQUEUE_TASK_MODULES=("tests", "shared.jobs")):
        assert not [error for error in check_settings() if "TASK_MODULES" in error.msg]
