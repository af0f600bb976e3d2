"""Which of the package's migrations a database lacks, for the checks and the daemons' start.

A table that ``migrate`` never created otherwise shows as a ``Table ... doesn't exist`` deep in
the first statement of a relay, a scheduler or a sweep: a traceback of some eighty lines that
does not say "migrate". Reads the ``django_migrations`` table only.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.apps import apps
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

#: The package's apps: the job queue and its optional apps.
PACKAGE = "django_skipqueue"


def installed_labels() -> list[str]:
    """Return the labels of the package's installed apps, the job queue first."""
    return [
        config.label
        for config in apps.get_app_configs()
        if config.name == PACKAGE or config.name.startswith(PACKAGE + ".")
    ]


def label_of(name: str) -> str:
    """Return the label of the installed app ``name`` ("django_skipqueue.outbox")."""
    return next(config.label for config in apps.get_app_configs() if config.name == name)


def unapplied(using: str, labels: Iterable[str]) -> dict[str, list[str]]:
    """Return the migrations of the apps ``labels`` not applied to ``using``, by app label.

    An app with every migration applied is left out: an empty dict means all are applied.
    """
    executor = MigrationExecutor(connections[using])
    wanted = set(labels)
    targets = [node for node in executor.loader.graph.leaf_nodes() if node[0] in wanted]
    found: dict[str, list[str]] = {}
    for migration, _backwards in executor.migration_plan(targets):
        found.setdefault(migration.app_label, []).append(migration.name)
    return found


def describe(using: str, missing: dict[str, list[str]]) -> str:
    """Say in one sentence which migrations ``using`` lacks and what to run."""
    apps_named = "; ".join(
        f"{label}: {', '.join(names[:3])}{', ...' if len(names) > 3 else ''}"
        for label, names in missing.items()
    )
    count = sum(len(names) for names in missing.values())
    return (
        f"The database {using!r} lacks {count} migration(s) of django-skipqueue "
        f'({apps_named}): run "python manage.py migrate".'
    )
