"""Which module a stored task path may import: rows are data, and importing runs code.

A job row, a schedule or a batch callback names its task by dotted path, and the worker, the
scheduler and the schedule admin's form find the Task at that path
(:func:`django_skipqueue.context.resolve_task`). Importing a module runs it (``this`` prints
the Zen of Python, ``antigravity`` opens a browser) before anything could check that the path
names a Task, so a path is looked up only in a module that is

- imported already: every module that defines a task is, once its task exists, and looking
  in it runs no code (``resolve_task`` does, without coming here); or
- one of the project's own: inside the package of an installed app (``AppConfig.name``), inside
  the top-level package of the settings module (the project package ``startproject`` makes),
  or inside a module or package listed in ``SKIPQUEUE_TASK_MODULES``.

Any other path is refused with :class:`TaskNotFound` without being imported. The check comes
before ``importlib``, which imports each parent package (running its ``__init__``) first.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from django.apps import apps
from django.conf import settings

from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import TaskNotFound

#: Said when a stored path names no Task: the likely causes and the way out.
RENAMED = (
    " Renamed or removed? A job keeps the path it was enqueued with: keep the old name as an "
    "alias (old_name = new_name) until its jobs are done, or deploy workers with the code "
    "that defines it, then retry the failed job."
)


def import_project_module(path: str, module_name: str) -> ModuleType:
    """Import the module of task ``path`` if it is one of the project's own.

    Raise TaskNotFound, without importing anything, for a module outside the project's
    packages, and for one that cannot be imported.
    """
    if not is_project_module(module_name):
        raise TaskNotFound(
            f"Task path {path!r} is outside the project's packages: module {module_name!r} "
            "is not in an installed app, the settings module's package or "
            "SKIPQUEUE_TASK_MODULES, so it was not imported (importing runs its code). A task "
            "defined in another package: list that package in SKIPQUEUE_TASK_MODULES."
        )
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise TaskNotFound(
            f"Cannot import the module of task {path!r}: {error}.{RENAMED}"
        ) from error


def is_project_module(module_name: str) -> bool:
    """Tell whether a module lies in one of the packages task paths may import."""
    return any(
        module_name == package or module_name.startswith(f"{package}.")
        for package in task_packages()
    )


def task_packages() -> list[str]:
    """Installed apps' packages, the settings module's top-level package, SKIPQUEUE_TASK_MODULES.

    Read again on each new path (each is resolved once per process), so that it follows
    ``override_settings`` in tests.
    """
    packages = [config.name for config in apps.get_app_configs()]
    settings_module = getattr(settings, "SETTINGS_MODULE", None) or ""
    if "." in settings_module:
        packages.append(settings_module.partition(".")[0])
    packages.extend(get_settings().TASK_MODULES)
    return packages
