"""Django and django-tasks versions: the import of the Tasks API, the portable ``@task``, and the
system checks of a combination that cannot work (django_skipqueue.E011, E012, W004)."""

from __future__ import annotations

import os
import subprocess
import sys

import django
import pytest
from django.core import checks
from django.test import modify_settings, override_settings

from django_skipqueue import checks as version_checks
from django_skipqueue.compat import BUILTIN, DUMMY_BACKEND, TASK_DECORATOR_TAKES_OPTIONS
from django_skipqueue.tasks import SkipQueueTask, task
from tests.conftest import ROOT


def double(n: int) -> int:
    return 2 * n


def test_the_running_versions_pass_the_checks():
    assert version_checks.check_versions() == []
    assert version_checks.check_versions in checks.registry.registry.get_checks()


def test_only_django_6_0_has_a_task_decorator_without_options():
    assert (django.VERSION[:2] != (6, 0)) == TASK_DECORATOR_TAKES_OPTIONS


def test_a_django_older_than_5_2_is_an_error(monkeypatch):
    monkeypatch.setattr(version_checks.django, "VERSION", (5, 1, 9, "final", 0))
    [error] = version_checks.check_versions()
    assert error.id == "django_skipqueue.E011"
    assert "needs Django 5.2 or later" in error.msg


def test_a_backport_older_than_0_12_is_an_error_on_django_5_2(monkeypatch):
    monkeypatch.setattr(version_checks, "BUILTIN", False)
    monkeypatch.setattr(version_checks, "backport_version", lambda: (0, 11, 0))
    [error] = version_checks.check_versions()
    assert error.id == "django_skipqueue.E012"
    assert "0.12 or later; 0.11.0 is installed" in error.msg
    monkeypatch.setattr(version_checks, "backport_version", lambda: (0, 12, 0))
    assert version_checks.check_versions() == []


@pytest.mark.skipif(not BUILTIN, reason="Django 6 only: the backport app is expected on 5.2")
def test_the_backport_app_on_django_6_is_warned():
    registered = set(checks.registry.registry.registered_checks)
    try:
        with modify_settings(INSTALLED_APPS={"append": "django_tasks"}):
            assert [m.id for m in version_checks.check_versions()] == ["django_skipqueue.W004"]
    finally:
        # The backport's app registered its own check of every backend when it was ready:
        # leave the registry as the rest of the suite expects it.
        checks.registry.registry.registered_checks &= registered
    assert version_checks.check_versions() == []


def test_django_5_2_without_the_backport_says_what_to_install():
    """The import of the Tasks API with the backport made unimportable, in a fresh process."""
    code = (
        "import sys; sys.modules['django_tasks'] = None\n"
        "from django.core.exceptions import ImproperlyConfigured\n"
        "try:\n"
        "    import django_skipqueue.compat\n"
        "except ImproperlyConfigured as error:\n"
        "    print('refused:', error)\n"
        "else:\n"
        "    print('imported from', django_skipqueue.compat.TASKS_MODULE)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    if BUILTIN:
        assert done.stdout.strip() == "imported from django.tasks"
    else:
        assert done.stdout.startswith("refused: django-skipqueue on Django 5.2")
        assert "pip install 'django-tasks>=0.12'" in done.stdout


def test_the_portable_decorator_carries_the_options_on_every_version():
    declared = task(max_attempts=4, timeout=9, queue_name="default")(double)
    assert isinstance(declared, SkipQueueTask)
    assert (declared.max_attempts, declared.timeout, declared.func) == (4, 9, double)
    assert task(double).max_attempts is None


def test_the_portable_decorator_refuses_run_after_as_django_does():
    with pytest.raises(TypeError, match="run_after cannot be defined statically"):
        task(run_after=None)


def test_options_on_a_backend_of_another_kind_are_a_type_error():
    with override_settings(TASKS={"default": {"BACKEND": DUMMY_BACKEND}}):
        with pytest.raises(TypeError, match="max_attempts"):
            task(max_attempts=3)(double)
        assert not isinstance(task(double), SkipQueueTask)


def test_only_the_compatibility_module_imports_the_tasks_framework():
    """Another module importing django.tasks (or django_tasks) directly breaks Django 5.2 (or
    6.x): it would pass on the newest Django and fail only in the matrix."""
    import ast

    offenders = []
    builtin = ("django.tasks.", "django.tasks")
    for folder in ("django_skipqueue", "tests", "testproject", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "compat.py" and path.parent.name == "django_skipqueue":
                continue
            if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                continue  # benchmarks/.venv-peers: the peers' own Django
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else []
                )
                if any(
                    n.partition(".")[0] == "django_tasks" or n.startswith(builtin) for n in names
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "import from django_skipqueue.compat instead"
