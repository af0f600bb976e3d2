"""System checks of SKIPQUEUE_SCHEDULES; ids on docs/reference/checks.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.checks import CheckMessage, Error, register

from django_skipqueue.checks import HINT
from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import InvalidSchedule
from django_skipqueue.scheduling.definition import from_setting

#: The check id of each kind of mistake (InvalidSchedule.field).
IDS = {
    "": "django_skipqueue.E301",
    "cron": "django_skipqueue.E302",
    "task": "django_skipqueue.E303",
    "time_zone": "django_skipqueue.E304",
}


@register()
def check_schedules(**kwargs: Any) -> list[CheckMessage]:
    """Check every declared schedule: its keys, cron expression, task and time zone."""
    schedules = get_settings().SCHEDULES
    if not isinstance(schedules, Mapping):
        message = f"SKIPQUEUE_SCHEDULES must be a dict of name -> schedule, not {schedules!r}."
        return [Error(message, hint=HINT, id=IDS[""])]
    found: list[CheckMessage] = []
    for name, entry in schedules.items():
        try:
            from_setting(name, entry)
        except InvalidSchedule as error:
            message = f"SKIPQUEUE_SCHEDULES[{name!r}]: {error}"
            found.append(Error(message, hint=HINT, id=IDS[error.field]))
    return found
