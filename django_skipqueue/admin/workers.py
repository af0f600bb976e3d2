"""The worker processes table, read-only: the workers write it at every heartbeat."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from .queues import admin_database


class WorkerProcessAdmin(admin.ModelAdmin):
    list_display = (
        "owner",
        "role",
        "hostname",
        "pid",
        "queues",
        "last_heartbeat_at",
        "stopped_at",
        "claimed",
        "succeeded",
        "failed",
        "reclaimed",
        "claim_p50_ms",
        "claim_p95_ms",
    )
    list_filter = ("role",)
    ordering = ("-last_heartbeat_at",)
    show_facets = admin.ShowFacets.NEVER

    def get_queryset(self, request: HttpRequest):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).using(admin_database())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
