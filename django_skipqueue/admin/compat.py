"""The admin's actions on every supported Django: 6.1 also offers them on an object's page.

Django 6.1 added ``@admin.action(location=..., description_plural=...)`` and
``ActionLocation``: the job page shows "Retry this failed job" beside the list's "Retry selected
failed jobs". On Django 5.2 and 6.0 the same actions are offered on the job list only, with
their plural description. Kept apart from ``django_skipqueue.compat`` because importing the
admin there would load it with the models.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.contrib import admin

#: Whether this Django offers actions on an object's change page (6.1 and later).
ACTIONS_ON_CHANGE_FORM = hasattr(admin, "ActionLocation")

if TYPE_CHECKING or ACTIONS_ON_CHANGE_FORM:
    from django.contrib.admin import ActionLocation
else:

    class ActionLocation(enum.Enum):
        """Django 6.1's places where an action is offered; older versions know only the list."""

        CHANGE_FORM = "CHANGE_FORM"
        CHANGE_LIST = "CHANGE_LIST"


def action(
    *,
    permissions: Sequence[str],
    description: str,
    description_plural: str | None = None,
    location: list[ActionLocation] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@admin.action`` with Django 6.1's ``location`` and ``description_plural``.

    On older versions the action is offered on the list, described by ``description_plural``.
    """
    if description_plural is None or location is None:
        return admin.action(permissions=permissions, description=description)
    if ACTIONS_ON_CHANGE_FORM:
        return admin.action(
            permissions=permissions,
            description=description,
            description_plural=description_plural,
            location=location,
        )
    return admin.action(permissions=permissions, description=description_plural)
