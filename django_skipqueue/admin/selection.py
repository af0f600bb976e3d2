"""Admin actions check the ids they were sent before any query: a forged id costs a message.

Django's admin builds ``pk__in`` from the posted checkboxes as they come; an id that is not a
number (a forged or mangled form) raises ``ValueError`` deep in the query, a server error.
Imports nothing of the package, like ``readonly``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect


class CheckedSelection(admin.ModelAdmin):
    """A ModelAdmin whose actions refuse a selection holding an id its key cannot be."""

    def response_action(
        self, request: HttpRequest, queryset: QuerySet[Any, Any], *args: Any, **kwargs: Any
    ) -> Any:
        pk = self.model._meta.pk
        assert pk is not None
        for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
            try:
                pk.to_python(value)
            except ValidationError:
                self.message_user(
                    request,
                    f"{value[:40]!r} is not an id of a {self.model._meta.verbose_name}: "
                    "nothing was done.",
                    messages.ERROR,
                )
                return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset, *args, **kwargs)
