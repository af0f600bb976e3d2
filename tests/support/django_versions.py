"""The docs' samples as a reader on the Django under test writes them.

The pages import from ``django.tasks`` and pass this backend's options to ``@task``, as on
Django 6.1. docs/howto/install.md tells readers on older versions what to write instead, and the
suite follows those two rules when it runs the samples on another Django of the matrix:

- on Django 6.0, whose ``@task`` takes no options, ``task`` comes from
  ``django_skipqueue.tasks`` (the rest of the import stays);
- on Django 5.2, ``django.tasks`` is the backport's ``django_tasks``.
"""

from __future__ import annotations

import re

from django_skipqueue.compat import TASK_DECORATOR_TAKES_OPTIONS, TASKS_MODULE

TASK_IMPORT = re.compile(r"^from django\.tasks import (?P<names>[^(\n]+)$", re.MULTILINE)


def as_on_this_django(text: str) -> str:
    """``text`` rewritten by the install page's rules for this Django (unchanged on 6.1)."""
    if not TASK_DECORATOR_TAKES_OPTIONS:
        text = TASK_IMPORT.sub(_task_from_this_package, text)
    if TASKS_MODULE != "django.tasks":
        text = text.replace("django.tasks", TASKS_MODULE)
    return text


def _task_from_this_package(match: re.Match[str]) -> str:
    names, _, comment = match.group("names").partition("#")
    names_list = [name.strip() for name in names.split(",")]
    if "task" not in names_list:
        return match.group(0)
    rest = [name for name in names_list if name != "task"]
    lines = [f"from django.tasks import {', '.join(rest)}"] if rest else []
    suffix = f"  #{comment}" if comment else ""
    lines.append(f"from django_skipqueue.tasks import task{suffix}")
    return "\n".join(lines)
