"""The outbox in the admin: unsent messages and dead letters, read-only, and "send again"."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from ..admin.readonly import ReadOnlyAdmin
from .models import MessageStatus, OutboxMessage, OutboxRelay
from .wakeup import after_commit


@admin.action(permissions=["resend"], description="Send selected dead letters again")
def send_again(model_admin: OutboxMessageAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    """Give dead letters back to the relay as new pending messages with their own ids."""
    using = queryset.db
    with transaction.atomic(using=using):
        dead = queryset.filter(status=MessageStatus.DEAD)
        resent = dead.update(
            status=MessageStatus.PENDING, attempts=0, owner=None, available_at=None
        )
        after_commit(using)
    skipped = queryset.count() - resent
    model_admin.message_user(request, f"{resent} dead letter(s) will be sent again.")
    if skipped > 0:
        model_admin.message_user(
            request,
            f"{skipped} message(s) left alone: only dead letters are sent again.",
            messages.WARNING,
        )


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "status",
        "topic",
        "key",
        "message_id",
        "attempts",
        "created_at",
        "available_at",
        "error",
    )
    list_filter = ("status", "topic")
    search_fields = ("=message_id", "=key")
    ordering = ("-id",)
    actions = [send_again]

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("skipqueue_outbox.resend_outboxmessage")

    @admin.display(description="last error")
    def error(self, message: OutboxMessage) -> str:
        return message.last_error[:120]


@admin.register(OutboxRelay)
class OutboxRelayAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "broker",
        "started_at",
        "last_heartbeat_at",
        "stopped_at",
        "sent",
        "retried",
        "dead",
        "confirm_ms",
    )
    ordering = ("-started_at",)
