"""The system check of the Django and django-tasks versions this package runs on.

Installed with its dependencies, the package gets a Django and a backport that fit. Pins of an
older project, ``pip install --no-deps`` or a backport left in ``INSTALLED_APPS`` after an
upgrade to Django 6 can still put together versions that do not, and what fails then (an
attribute missing deep in a worker, tasks seen by one registry and not the other) says nothing
of the cause. A missing backport on Django 5.2 stops the import of ``django_skipqueue.compat``
itself, with an ``ImproperlyConfigured`` error that says what to install.
"""

from __future__ import annotations

from collections.abc import Iterator

import django
from django.apps import apps
from django.core.checks import CheckMessage, Error, Warning

from django_skipqueue.checks import HINT
from django_skipqueue.compat import BUILTIN, MINIMUM_BACKPORT, MINIMUM_DJANGO, backport_version


def check_versions(**kwargs: object) -> list[CheckMessage]:
    """Flag a Django, or a Django and django-tasks pair, this package cannot run on."""
    return [*_old_django(), *_old_backport(), *_backport_app_on_django6()]


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _old_django() -> Iterator[CheckMessage]:
    if django.VERSION[:2] < MINIMUM_DJANGO:
        yield Error(
            f"django-skipqueue needs Django {_dotted(MINIMUM_DJANGO)} or later; this is "
            f"Django {django.get_version()}.",
            hint="Upgrade Django (5.2 LTS, 6.0 or 6.1). " + HINT,
            id="django_skipqueue.E011",
        )


def _old_backport() -> Iterator[CheckMessage]:
    if BUILTIN:
        return
    version = backport_version()
    if version is not None and version < MINIMUM_BACKPORT:
        yield Error(
            f"On Django {django.get_version()}, django-skipqueue runs on the django-tasks "
            f"backport {_dotted(MINIMUM_BACKPORT)} or later; {_dotted(version)} is installed.",
            hint=f"pip install 'django-tasks>={_dotted(MINIMUM_BACKPORT)}'. " + HINT,
            id="django_skipqueue.E012",
        )


def _backport_app_on_django6() -> Iterator[CheckMessage]:
    if BUILTIN and apps.is_installed("django_tasks"):
        yield Warning(
            f"'django_tasks' (the django-tasks backport) is in INSTALLED_APPS on Django "
            f"{django.get_version()}, which has django.tasks built in. The backport keeps a "
            "registry of its own: receivers of django_tasks.signals never hear of this "
            "backend's jobs, and TASKS changed in tests reset only one of the two.",
            hint="Remove 'django_tasks' from INSTALLED_APPS and import from django.tasks (or "
            "declare tasks with django_skipqueue.tasks.task). " + HINT,
            id="django_skipqueue.W004",
        )
