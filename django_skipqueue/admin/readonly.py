"""The admin base of rows a process owns: shown, never added, edited or deleted by hand.

The optional apps' admins (outbox messages and relays, reservation pools, holds and the
ledger, schedule ticks) list rows that their relay, their API or their scheduler writes under
its own locks and fences; a hand edit would bypass them. Their actions go through those same
paths. The job admin is not one of them: it may delete finished jobs.

Imports nothing of the package but ``selection``. The optional apps import it from their
admin modules, which Django loads once the models are ready (importing it runs
``admin/__init__.py``, which registers the job admin: Django's admin discovery does the same).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from .selection import CheckedSelection


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
