"""A schedule's definition, validated the same way from settings, the admin and the scheduler.

``manage.py check`` reads SKIPQUEUE_SCHEDULES through :func:`from_setting`, the admin form
through :func:`validate`: a bad cron expression, time zone or task path is refused before any
scheduler meets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.text import slugify

from django_skipqueue.apps import require_installed
from django_skipqueue.compat import DEFAULT_TASK_BACKEND_ALIAS, InvalidTask, Task, task_backends
from django_skipqueue.conf import get_settings
from django_skipqueue.durations import parse_duration
from django_skipqueue.exceptions import InvalidSchedule, SkipQueueError
from django_skipqueue.payload import check_size, normalize_arguments
from django_skipqueue.scheduling.models import Missed
from django_skipqueue.scheduling.timing import Timing

#: Keys of an entry of SKIPQUEUE_SCHEDULES, and the model field each one fills.
KEYS = {
    "task": "task_path",
    "cron": "cron",
    "interval": "interval_seconds",
    "time_zone": "time_zone",
    "args": "args",
    "kwargs": "kwargs",
    "queue": "queue_name",
    "priority": "priority",
    "missed": "missed",
    "catch_up": "catch_up",
    "enabled": "enabled",
}
#: The model fields a definition fills, in the order of KEYS.
FIELDS = tuple(KEYS.values())
#: The fields an entry may leave out: the definition's defaults stand for them.
OPTIONAL = ("args", "kwargs", "queue_name", "priority", "missed", "catch_up", "enabled")


@dataclass(frozen=True)
class Definition:
    """What a schedule runs and when: the model fields a user sets."""

    name: str
    task_path: str
    timing: Timing
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    queue_name: str = ""
    priority: int | None = None
    missed: str = Missed.LATEST
    catch_up: int = 10
    enabled: bool = True

    def fields(self) -> dict[str, Any]:
        """The values of the Schedule model's definition fields."""
        values = {name: getattr(self, name) for name in ("task_path", *OPTIONAL)}
        return {
            **values,
            "args": list(self.args),
            "cron": self.timing.cron,
            "interval_seconds": self.timing.interval,
            "time_zone": self.timing.time_zone,
        }


def from_setting(name: object, entry: object) -> Definition:
    """Read one entry of SKIPQUEUE_SCHEDULES, or raise InvalidSchedule saying what is wrong."""
    if not isinstance(name, str) or not name or slugify(name) != name or len(name) > 100:
        raise InvalidSchedule(f"schedule name {name!r} must be a slug of 1 to 100 characters")
    if not isinstance(entry, Mapping):
        raise InvalidSchedule(f"schedule {name!r} must be a dict, not {entry!r}")
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise InvalidSchedule(f"schedule {name!r} has unknown keys {unknown}; known: {list(KEYS)}")
    values = {KEYS[key]: value for key, value in entry.items()}
    if values.get("interval_seconds") is not None:
        values["interval_seconds"] = _seconds(values["interval_seconds"])
    return validate(name, values)


def validate(name: str, values: Mapping[str, Any]) -> Definition:
    """Build and check a definition from model field values (a setting entry or a form)."""
    if "task_path" not in values:
        raise InvalidSchedule(f"schedule {name!r} names no task ('task': 'app.tasks.name')")
    timing = Timing(
        values.get("cron") or "", values.get("interval_seconds"), values.get("time_zone") or "UTC"
    )
    definition = Definition(
        name,
        values["task_path"],
        timing,
        **{key: values[key] for key in OPTIONAL if values.get(key) is not None},
    )
    _check_policy(definition)
    scheduled_task(definition)
    return definition


def scheduled_task(definition: Definition) -> Task:
    """The task a tick enqueues, with the schedule's queue and priority, or InvalidSchedule."""
    from django_skipqueue.context import resolve_task

    try:
        task = resolve_task(definition.task_path)
        task = task.using(queue_name=definition.queue_name or None, priority=definition.priority)
        _check_backend(task)
        check_size(
            *normalize_arguments(definition.args, definition.kwargs),
            get_settings().MAX_PAYLOAD_BYTES,
        )
    except (SkipQueueError, InvalidTask, TypeError, ValueError) as error:
        if isinstance(error, InvalidSchedule):
            raise
        raise InvalidSchedule(f"schedule {definition.name!r}: {error}", "task") from error
    return task


def schedule_database() -> str:
    """The schedules' database: the default backend's, where ticks and jobs commit together.

    Every scheduler asks it first: it refuses to run without the app installed.
    """
    require_installed("django_skipqueue.scheduling", "A scheduler")
    return str(getattr(task_backends[DEFAULT_TASK_BACKEND_ALIAS], "database", "default"))


def _check_backend(task: Task) -> None:
    backend = task.get_backend()
    database = getattr(backend, "database", None)
    if database != schedule_database():
        raise InvalidSchedule(
            f"task {task.module_path!r} goes to backend {backend.alias!r}, which is not a "
            f"SkipQueueBackend on database {schedule_database()!r}: its job could not commit "
            "with its tick",
            "task",
        )


def _check_policy(definition: Definition) -> None:
    if definition.missed not in Missed.values:
        raise InvalidSchedule(f"missed must be one of {Missed.values}, not {definition.missed!r}")
    catch_up = definition.catch_up
    if isinstance(catch_up, bool) or not isinstance(catch_up, int) or not 1 <= catch_up <= 1000:
        raise InvalidSchedule(f"catch_up must be a whole number from 1 to 1000, not {catch_up!r}")
    if not isinstance(definition.args, list | tuple) or not isinstance(definition.kwargs, dict):
        raise InvalidSchedule("args must be a list and kwargs a dict")
    if not isinstance(definition.enabled, bool):
        raise InvalidSchedule(f"enabled must be True or False, not {definition.enabled!r}")


def _seconds(value: object) -> int:
    try:
        seconds = parse_duration(value).total_seconds()
    except (TypeError, ValueError):
        raise InvalidSchedule(f"interval must be seconds or a duration, not {value!r}") from None
    if seconds < 1 or seconds != int(seconds):
        raise InvalidSchedule(f"interval must be whole seconds >= 1, not {value!r}")
    return int(seconds)
