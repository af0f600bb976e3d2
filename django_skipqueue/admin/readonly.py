"""The admin base of rows a process owns: shown, never added, edited or deleted by hand.

The optional apps' admins (outbox messages and relays, reservation pools, holds and the
ledger, schedule ticks) list rows that their relay, their API or their scheduler writes under
its own locks and fences; a hand edit would bypass them. Their actions go through those same
paths. The job admin is not one of them: it may delete finished jobs.

Their pages show times as the job pages do (UTC, to the second), not in Django's localized
format: each date-time field is shown through ``<name>__utc``, built on demand.

The optional apps import it from their admin modules, which Django loads once the models are
ready (importing it runs ``admin/__init__.py``, which registers the job admin: Django's admin
discovery does the same).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models
from django.http import HttpRequest

from django_skipqueue.admin.cells import when
from django_skipqueue.admin.selection import CheckedSelection

#: The suffix of a date-time field shown in UTC on a row's page.
UTC = "__utc"


class ReadOnlyAdmin(CheckedSelection):
    """A ModelAdmin that lists and shows rows, and refuses to add, change or delete them."""

    # Exact counts of a long history or backlog cost a scan on every page view.
    show_full_result_count = False

    class Media:
        # Status labels, notes under a value, and cells that wrap to fit a 1400 px window.
        css = {"all": ("django_skipqueue/admin.css",)}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        shown = [f"{field.name}{UTC}" for field in self._times()]
        return [*super().get_readonly_fields(request, obj), *shown]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """The fields in their order, each date-time one in UTC, each once."""
        times = {field.name for field in self._times()}
        names = [
            f"{name}{UTC}" if name in times else name for name in super().get_fields(request, obj)
        ]
        return list(dict.fromkeys(names))

    def __getattr__(self, name: str) -> Callable[[Any], Any]:
        if not name.endswith(UTC):
            raise AttributeError(name)
        field = self.model._meta.get_field(name.removesuffix(UTC))

        def shown(row: Any) -> Any:
            return when(getattr(row, field.name))

        shown.short_description = f"{field.verbose_name} (UTC)"  # type: ignore[attr-defined]
        return shown

    def _times(self) -> list[models.Field[Any, Any]]:
        return [
            field
            for field in self.model._meta.concrete_fields
            if isinstance(field, models.DateTimeField)
        ]
