"""Batches and chains in the admin: outcome, counts, members, callbacks and steps, read-only.

Every figure of the list is a column of the batch row: the list reads no job. A batch's page
reads a bounded list of its member jobs (failed first). Nothing is added, changed or deleted
by hand: the counters are written under the batch row's lock by the transaction that records
each member's outcome.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.safestring import SafeString

from django_skipqueue.admin import cells
from django_skipqueue.admin.readonly import ReadOnlyAdmin
from django_skipqueue.workflows import admin_cells
from django_skipqueue.workflows.models import Batch, Kind


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "title", "progress", "created", "finished")
    list_filter = ("kind",)
    search_fields = ("description",)
    ordering = ("-id",)
    readonly_fields = ("progress", "callbacks", "members", "chain_steps", "created", "finished")
    fields = (
        "kind",
        "description",
        "parent",
        "progress",
        "created",
        "finished",
        "callbacks",
        "callback_error",
        "callback_kwargs",
        "members",
        "chain_steps",
    )

    def get_fields(self, request: HttpRequest, obj: Batch | None = None) -> Any:
        # A chain's members are its steps: listed once, in order, with their return values.
        hidden = "members" if obj is not None and obj.kind == Kind.CHAIN else "chain_steps"
        return [name for name in self.fields if name != hidden]

    @admin.display(description="description", ordering="description")
    def title(self, batch: Batch) -> SafeString:
        return cells.clipped(batch.description, 60)

    @admin.display(description="progress")
    def progress(self, batch: Batch) -> SafeString:
        return admin_cells.progress(batch)

    @admin.display(description="created (UTC)", ordering="created_at")
    def created(self, batch: Batch) -> SafeString:
        return cells.when(batch.created_at)

    @admin.display(description="finished (UTC)", ordering="finished_at")
    def finished(self, batch: Batch) -> SafeString:
        return cells.when(batch.finished_at)

    @admin.display(description="callbacks")
    def callbacks(self, batch: Batch) -> SafeString:
        return admin_cells.callbacks(batch)

    @admin.display(description="members (failed first)")
    def members(self, batch: Batch) -> SafeString:
        return admin_cells.members(batch)

    @admin.display(description="steps")
    def chain_steps(self, batch: Batch) -> SafeString:
        return admin_cells.steps(batch)
