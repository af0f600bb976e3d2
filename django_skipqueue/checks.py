"""System checks, each with an id documented in docs/reference/checks.md.

The checks of each configured backend, of the database (its binlog format) and of the Django
and django-tasks versions the package runs on. Installed with its dependencies, the package
gets a Django and a backport that fit. Pins of an older project, ``pip install --no-deps`` or a
backport left in ``INSTALLED_APPS`` after an upgrade to Django 6 can still put together
versions that do not, and what fails then (an attribute missing deep in a worker, tasks seen
by one registry and not the other) says nothing of the cause. A missing backport on Django 5.2
stops the import of ``django_skipqueue.compat`` itself, with an ``ImproperlyConfigured`` error
that says what to install.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import django
from django.apps import AppConfig, apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.db import DatabaseError, connections

from django_skipqueue.compat import BUILTIN, MINIMUM_BACKPORT, MINIMUM_DJANGO, backport_version
from django_skipqueue.conf import SkipQueueSettings
from django_skipqueue.db.migrated import describe, installed_labels, unapplied
from django_skipqueue.extensions import extensions

if TYPE_CHECKING:
    from django_skipqueue.backend import SkipQueueBackend

#: Where every check id and its fix is listed: a page of the docs, in the source tree
#: (docs/ is not installed with the package, and the docs are not published yet).
HINT = "See docs/reference/checks.md in django-skipqueue's source: every check and its fix."


def check_backend(backend: SkipQueueBackend) -> list[CheckMessage]:
    """Run every check that concerns one configured backend."""
    if backend.database not in settings.DATABASES:
        return [
            Error(
                f"Task backend {backend.alias!r} uses database {backend.database!r}, "
                "which is not in DATABASES.",
                hint=HINT,
                id="django_skipqueue.E002",
            )
        ]
    return [
        *check_database(backend.database),
        *check_time_zone(),
        *check_queue_names(backend),
        *check_wakeup_fanout(),
        *check_shared_database(backend),
    ]


def check_database(alias: str) -> list[CheckMessage]:
    """Check the queue's database supports a safe claim; never opens a connection."""
    connection = connections[alias]
    if connection.vendor == "sqlite":
        return _check_sqlite(alias, connection.settings_dict)
    if not connection.features.has_select_for_update_skip_locked:
        return [
            Error(
                f"Database {alias!r} ({connection.vendor}) has no SELECT ... FOR UPDATE "
                "SKIP LOCKED; use MySQL 8.0+, MariaDB 10.6+ or PostgreSQL.",
                hint=HINT,
                id="django_skipqueue.E001",
            )
        ]
    if connection.vendor == "mysql":
        return _check_isolation(alias, connection.settings_dict)
    return []


def _check_isolation(alias: str, settings_dict: dict) -> list[CheckMessage]:
    level = settings_dict.get("OPTIONS", {}).get("isolation_level", "read committed")
    if level and level.lower() == "read committed":
        return []
    return [
        Warning(
            f"Database {alias!r} is configured with isolation_level={level!r}. Claims "
            "should run at READ COMMITTED: at REPEATABLE READ locking reads take gap and "
            "next-key locks that deadlock claimers and block enqueues.",
            hint=HINT,
            id="django_skipqueue.W001",
        )
    ]


def _check_sqlite(alias: str, settings_dict: dict) -> list[CheckMessage]:
    mode = settings_dict.get("OPTIONS", {}).get("transaction_mode")
    if mode and mode.upper() in ("IMMEDIATE", "EXCLUSIVE"):
        return []
    return [
        Warning(
            f"SQLite database {alias!r} has no SKIP LOCKED: claims are only serialised when "
            "OPTIONS has transaction_mode='IMMEDIATE'. SQLite is for development.",
            hint=HINT,
            id="django_skipqueue.W002",
        )
    ]


def check_time_zone() -> list[CheckMessage]:
    if settings.USE_TZ:
        return []
    return [
        Error(
            "django-skipqueue needs USE_TZ = True: leases are computed in UTC by the database.",
            hint=HINT,
            id="django_skipqueue.E003",
        )
    ]


def check_queue_names(backend: SkipQueueBackend) -> list[CheckMessage]:
    from django_skipqueue.tasks import QUEUE_NAME_PATTERN

    return [
        Error(
            f"Task backend {backend.alias!r} has an invalid queue name {name!r}.",
            hint=HINT,
            id="django_skipqueue.E004",
        )
        for name in backend.queue_names
        if not QUEUE_NAME_PATTERN.fullmatch(name)
    ]


def check_wakeup_fanout() -> list[CheckMessage]:
    fanout = getattr(settings, "SKIPQUEUE_WAKEUP_FANOUT", SkipQueueSettings().WAKEUP_FANOUT)
    if fanout is None or (isinstance(fanout, int) and not isinstance(fanout, bool) and fanout > 0):
        return []
    return [
        Error(
            f"SKIPQUEUE_WAKEUP_FANOUT must be None or a positive integer, not {fanout!r}.",
            hint=HINT,
            id="django_skipqueue.E005",
        )
    ]


def check_shared_database(backend: SkipQueueBackend) -> list[CheckMessage]:
    """Refuse a second SkipQueueBackend alias whose jobs table is another alias's.

    Job rows do not record their alias: on a shared table each alias's workers would run the
    other's jobs, and each alias's ``get_result()`` would report every job as its own. Queues
    already divide the work of one alias.
    """
    mine = _database_identity(backend.database)
    for alias, database in _skipqueue_aliases():
        if alias == backend.alias:
            return []
        if _database_identity(database) == mine:
            return [
                Error(
                    f"Task backends {alias!r} and {backend.alias!r} are both SkipQueueBackends "
                    f"on the same database ({database!r} and {backend.database!r}).",
                    hint="Use one alias with several QUEUES, or a database per alias. " + HINT,
                    id="django_skipqueue.E006",
                )
            ]
    return []


#: The backend class, named rather than imported: the backend runs these checks, so this
#: module sits below it in the package's layers (docs/discussions/architecture.md).
BACKEND_CLASS = ("django_skipqueue.backend", "SkipQueueBackend")


def is_skipqueue_backend(backend: object) -> bool:
    """Whether ``backend`` is a SkipQueueBackend or a subclass of it."""
    classes = type(backend).__mro__
    return any((cls.__module__, cls.__qualname__) == BACKEND_CLASS for cls in classes)


def _skipqueue_aliases() -> list[tuple[str, str]]:
    """(alias, database alias) of each SkipQueueBackend in TASKS, in settings order."""
    from django_skipqueue.compat import task_backends

    found = []
    for alias in task_backends.settings:
        try:
            backend = task_backends[alias]
        except Exception:  # a backend that cannot load has its own error
            continue
        if is_skipqueue_backend(backend):
            found.append((alias, backend.database))  # type: ignore[attr-defined]
    return found


def _database_identity(alias: str) -> tuple[object, ...]:
    """What makes two DATABASES aliases the same database (another alias of it too)."""
    if alias not in settings.DATABASES:
        return (alias,)
    config = settings.DATABASES[alias]
    return tuple(config.get(key) for key in ("ENGINE", "NAME", "HOST", "PORT"))


def check_binlog_format(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """Warn where the queue's MySQL/MariaDB connections log statements rather than rows.

    Run by ``manage.py check --database ALIAS`` (it connects, so Django only runs it when
    asked). The manual: statements with SKIP LOCKED are unsafe for statement-based
    replication; a replica would replay a claim and lock other rows than the source did.
    """
    queue_databases = {database for _, database in _skipqueue_aliases()}
    found: list[CheckMessage] = []
    for alias in databases or []:
        if alias not in queue_databases or connections[alias].vendor != "mysql":
            continue
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT @@SESSION.binlog_format, @@GLOBAL.log_bin")
                binlog_format, log_bin = cursor.fetchone()
        except DatabaseError:
            continue  # an unreachable database is reported by Django's own checks
        if str(binlog_format).upper() == "STATEMENT":
            binlog = "on" if log_bin else "off for now"
            found.append(
                Warning(
                    f"Database {alias!r} uses binlog_format=STATEMENT (binary log {binlog}). "
                    "Statements with SKIP LOCKED are unsafe for statement-based replication: "
                    "a replica replaying a claim may lock and change other rows than the "
                    "source did.",
                    hint="Set binlog_format=ROW (or MIXED) on the server. " + HINT,
                    id="django_skipqueue.W003",
                )
            )
    return found


def check_result_bound(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """Warn where SKIPQUEUE_MAX_RESULT_BYTES exceeds what the server's max_allowed_packet
    lets one statement carry (``manage.py check --database ALIAS``; runworkers logs it too)."""
    from django_skipqueue.db.packets import byte_limits_problem

    queue_databases = {database for _, database in _skipqueue_aliases()}
    found: list[CheckMessage] = []
    for alias in databases or []:
        if alias not in queue_databases:
            continue
        try:
            problem = byte_limits_problem(alias)
        except DatabaseError:
            continue  # an unreachable database is reported by Django's own checks
        if problem is not None:
            found.append(Warning(problem, hint=HINT, id="django_skipqueue.W005"))
    return found


def check_migrated(
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    """Warn where a database of the package lacks migrations of its installed apps.

    Run by ``manage.py check --database ALIAS`` (it reads ``django_migrations``). Not by
    ``manage.py migrate``, which runs the same checks before it applies what this one names.
    """
    if sys.argv[1:2] == ["migrate"]:
        return []
    used = _package_databases()
    found: list[CheckMessage] = []
    for alias in databases or []:
        if alias not in used:
            continue
        try:
            missing = unapplied(alias, installed_labels())
        except DatabaseError:
            continue  # an unreachable database is reported by Django's own checks
        if missing:
            found.append(Warning(describe(alias, missing), hint=HINT, id="django_skipqueue.W006"))
    return found


def _package_databases() -> set[str]:
    """The aliases that hold the package's tables: the queues', and the installed apps'."""
    used = {database for _, database in _skipqueue_aliases()}
    for extension in extensions():
        used |= extension.databases()
    return used


# The Django and django-tasks versions this package runs on.


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
