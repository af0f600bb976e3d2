"""The stable import paths the package docstring lists import, and moved modules still do."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

import django_skipqueue
from django_skipqueue import MOVED_MODULES


def documented_paths() -> list[str]:
    """Return the paths the package docstring lists: ``- ``module``: ``name``, ``name``...``."""
    text = (django_skipqueue.__doc__ or "").replace("\n  ", " ")
    paths = []
    for module, rest in re.findall(r"^- ``(django_skipqueue[\w.]*)``: (.*)$", text, re.M):
        paths.append(module)
        if re.fullmatch(r"``\w+``(, ``\w+``)*\.?", rest.strip()):
            paths += [f"{module}.{name}" for name in re.findall(r"``(\w+)``", rest)]
    return paths


@pytest.mark.parametrize("path", documented_paths())
def test_every_stable_import_path_in_the_package_docstring_imports(path):
    module_path, _, name = path.rpartition(".")
    try:
        found = importlib.import_module(path)
    except ModuleNotFoundError:
        found = getattr(importlib.import_module(module_path), name)
    assert found is not None


def test_the_package_docstring_lists_the_stable_paths():
    assert "django_skipqueue.worker.WorkerOptions" in documented_paths()
    assert "django_skipqueue.backend.SkipQueueBackend" in documented_paths()


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_a_moved_module_imports_from_its_old_path_with_a_deprecation_warning(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_the_worker_package_exports_the_classes_of_its_modules():
    from django_skipqueue.worker import Supervisor, Worker, WorkerOptions, default_maintenance

    assert Supervisor.__module__ == "django_skipqueue.worker.supervisor"
    assert Worker.__module__ == "django_skipqueue.worker.loop"
    assert WorkerOptions.__module__ == "django_skipqueue.worker.options"
    assert default_maintenance.__module__ == "django_skipqueue.worker.supervisor"
    with pytest.raises(AttributeError):
        _ = django_skipqueue.worker.NoSuchName  # type: ignore[attr-defined]
