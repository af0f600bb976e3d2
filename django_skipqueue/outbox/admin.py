"""The outbox in the admin: unsent messages and dead letters, read-only, and "send again"."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from django_skipqueue.admin import cells
from django_skipqueue.admin.detail import moment
from django_skipqueue.admin.readonly import ReadOnlyAdmin
from django_skipqueue.outbox import transitions
from django_skipqueue.outbox.models import OutboxMessage, OutboxRelay
from django_skipqueue.outbox.relays import after_commit
from django_skipqueue.outbox.stats import with_relay_state


@admin.action(permissions=["resend"], description="Send selected dead letters again")
def send_again(model_admin: OutboxMessageAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    """Give dead letters back to the relay as new pending messages with their own ids."""
    using = queryset.db
    with transaction.atomic(using=using):
        resent = transitions.send_again(queryset)
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
    list_display = ("id", "state", "topic", "key_cell", "attempts", "created", "error")
    list_filter = ("status", "topic")
    search_fields = ("=message_id", "=key")
    ordering = ("-id",)
    actions = [send_again]

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("skipqueue_outbox.resend_outboxmessage")

    @admin.display(description="status", ordering="status")
    def state(self, message: OutboxMessage) -> SafeString:
        """The status, and when a retried message is tried next."""
        note = f"next try {moment(message.available_at)}" if message.available_at else ""
        return cells.noted(message.get_status_display(), note)

    @admin.display(description="key, message id")
    def key_cell(self, message: OutboxMessage) -> SafeString:
        return cells.noted(cells.clipped(message.key, 24), cells.clipped(message.message_id, 24))

    @admin.display(description="created (UTC)", ordering="created_at")
    def created(self, message: OutboxMessage) -> SafeString:
        return cells.when(message.created_at)

    @admin.display(description="last error")
    def error(self, message: OutboxMessage) -> SafeString:
        return cells.clipped(message.last_error, 120)


@admin.register(OutboxRelay)
class OutboxRelayAdmin(ReadOnlyAdmin):
    list_display = ("relay", "broker_cell", "started", "heartbeat", "stopped", "sent",
                    "retried", "dead", "confirm")  # fmt: skip
    ordering = ("-started_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return with_relay_state(super().get_queryset(request))

    @admin.display(description="relay", ordering="name")
    def relay(self, row: OutboxRelay) -> SafeString:
        """The name, and whether the relay lives (a killed one is gone, its row kept)."""
        state = getattr(row, "state", "")
        state = format_html('<span class="skipqueue-relay-{}">{}</span>', state, state)
        return cells.noted(cells.clipped(row.name, 32), state)

    @admin.display(description="broker")
    def broker_cell(self, row: OutboxRelay) -> SafeString:
        return cells.clipped(row.broker, 40)

    @admin.display(description="started (UTC)", ordering="started_at")
    def started(self, row: OutboxRelay) -> SafeString:
        return cells.when(row.started_at)

    @admin.display(description="last heartbeat (UTC)", ordering="last_heartbeat_at")
    def heartbeat(self, row: OutboxRelay) -> SafeString:
        return cells.when(row.last_heartbeat_at)

    @admin.display(description="stopped (UTC)", ordering="stopped_at")
    def stopped(self, row: OutboxRelay) -> SafeString:
        return cells.when(row.stopped_at)

    @admin.display(description="confirm", ordering="confirm_ms")
    def confirm(self, row: OutboxRelay) -> str:
        return "-" if row.confirm_ms is None else f"{row.confirm_ms:.2f} ms"
