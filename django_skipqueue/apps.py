"""The app: its checks of the SKIPQUEUE_* settings, and the TASKS setting it needs."""

from __future__ import annotations

from django.apps import AppConfig, apps
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

BACKEND = "django_skipqueue.backend.SkipQueueBackend"


class SkipQueueConfig(AppConfig):
    name = "django_skipqueue"
    verbose_name = "Job queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_skipqueue.checks import (
            check_binlog_format,
            check_migrated,
            check_result_bound,
            check_versions,
        )
        from django_skipqueue.compat import ensure_backport_loaded
        from django_skipqueue.setting_checks import check_settings

        require_tasks_setting()
        ensure_backport_loaded()
        checks.register(check_settings)
        checks.register(check_binlog_format, checks.Tags.database)
        checks.register(check_result_bound, checks.Tags.database)
        checks.register(check_migrated, checks.Tags.database)
        checks.register(check_versions)


def require_tasks_setting() -> None:
    """Refuse to start without TASKS, before a task module is imported.

    Without TASKS, Django runs tasks with its ImmediateBackend, and ``@task(max_attempts=3)``
    fails on import with "unexpected keyword argument 'max_attempts'", far from the cause.
    Whatever sub-apps are installed: a project that uses the outbox alone says so with
    ``TASKS = {}`` (any TASKS setting), rather than every project losing the guard.
    """
    if settings.is_overridden("TASKS"):  # type: ignore[misc]
        return
    raise ImproperlyConfigured(
        "django_skipqueue is in INSTALLED_APPS, but the TASKS setting is missing, so tasks "
        'would run with Django\'s ImmediateBackend. Add: TASKS = {"default": {"BACKEND": '
        f'"{BACKEND}", "QUEUES": ["default"]}}}} (or TASKS = {{}} in a project that uses '
        "the outbox alone, with no tasks)"
    )


def require_installed(app: str, what: str) -> None:
    """Refuse ``what`` (an API call of the optional ``app``) when ``app`` is not installed.

    The call would otherwise fail on a table that ``migrate`` never created, or write rows
    that nothing ever reads (no relay, no sweep, no batch counting). Raised before any SQL.
    """
    from django_skipqueue.exceptions import AppNotInstalled

    if not apps.is_installed(app):
        raise AppNotInstalled(
            f"{what} needs {app!r} in INSTALLED_APPS: add it there (next to "
            "'django_skipqueue'), then run migrate."
        )
