"""Batches and chains in the admin: progress, counts and callbacks, read-only.

Every figure is a column of the batch row: the list reads no job. Nothing is added, changed or
deleted by hand: the counters are written under the batch row's lock by the transaction that
records each member's outcome.
"""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from ..admin.readonly import ReadOnlyAdmin
from .models import Batch


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "description", "progress", "succeeded", "failed",
                    "cancelled", "created_at", "finished_at")  # fmt: skip
    list_filter = ("kind",)
    search_fields = ("description",)
    ordering = ("-id",)
    readonly_fields = ("progress", "callbacks")
    fields = ("kind", "description", "parent", "progress", "size", "succeeded", "failed",
              "cancelled", "created_at", "finished_at", "callbacks", "callback_error",
              "callback_kwargs", "steps")  # fmt: skip

    @admin.display(description="progress")
    def progress(self, batch: Batch) -> str:
        """Ended members of all, as a bar and a count."""
        percent = 100 * batch.ended // batch.size if batch.size else 100
        state = "finished" if batch.is_finished else "running"
        return format_html(
            '<progress max="100" value="{}"></progress> {} / {} ({})',
            percent, batch.ended, batch.size, state,
        )  # fmt: skip

    @admin.display(description="callbacks")
    def callbacks(self, batch: Batch) -> str:
        """Each callback's task and the job it was enqueued as, once it was."""
        parts = [
            f"{name}: {path} -> job {job_id or '(not yet)'}"
            for name, path, job_id in (
                ("on_success", batch.on_success, batch.success_job_id),
                ("on_finish", batch.on_finish, batch.finish_job_id),
                ("on_failure", batch.on_failure, batch.failure_job_id),
            )
            if path
        ]
        return "; ".join(parts) or "none"
