"""Rows are data: only Task objects run, payloads are JSON, names are parameters."""

from __future__ import annotations

import os
import sys

import pytest

from django_skipqueue.context import resolve_task
from django_skipqueue.exceptions import InvalidQueueName, TaskNotFound
from django_skipqueue.models import Job
from tests.support.tasks import echo


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("os.system", "names a builtin_function_or_method, not a Task"),
        ("tests.support.tasks.not_a_task", "not a Task"),
        ("os.path.join", "not a Task"),
        ("builtins.eval", "not a Task"),
        ("no_such_module_anywhere.task", "outside the project's packages"),
        ("tests.support.no_such_module.task", "Cannot import"),
        ("tests.support.tasks.missing", "names nothing"),
        ("eval", "not a dotted path"),
        ("tests.support.tasks.echo()", "not a dotted path"),
    ],
)
def test_a_path_that_is_not_a_task_is_refused(path, message):
    with pytest.raises(TaskNotFound, match=message):
        resolve_task(path)


def test_resolution_imports_only_the_module_the_path_names():
    os.environ.pop("SKIPQUEUE_SIDEFX_IMPORTED", None)
    sys.modules.pop("tests.support.sidefx.trigger", None)
    with pytest.raises(TaskNotFound):
        resolve_task("tests.support.sidefx.trigger")
    assert "tests.support.sidefx.trigger" not in sys.modules
    assert "SKIPQUEUE_SIDEFX_IMPORTED" not in os.environ


def test_a_real_task_resolves():
    assert resolve_task("tests.support.tasks.echo") is echo


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", ["x'; DROP TABLE skipqueue_job; --", "a b", "", "-lead", "q" * 65]
)
def test_queue_names_are_validated(name):
    with pytest.raises(InvalidQueueName):
        echo.using(queue_name=name).enqueue()
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_queue_names_reach_sql_only_as_parameters():
    """Even a hostile name given straight to claim() is a bound parameter, not SQL."""
    assert Job.objects.claim(["x' OR '1'='1"], limit=5, owner="w") == []
    echo.enqueue()
    assert Job.objects.claim(["x' OR '1'='1"], limit=5, owner="w") == []
    assert Job.objects.ready().count() == 1


@pytest.mark.django_db
def test_payloads_are_stored_as_json_text():
    result = echo.enqueue({"nested": [1, 2.5, None, True, "é"]}, key="v")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT args, kwargs FROM skipqueue_job WHERE id = %s", [int(result.id)])
        raw_args, raw_kwargs = cursor.fetchone()
    import json

    assert json.loads(raw_args) == [{"nested": [1, 2.5, None, True, "é"]}]
    assert json.loads(raw_kwargs) == {"key": "v"}
