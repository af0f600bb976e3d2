"""The queue dashboard page and its pause / resume buttons.

The page needs the view permission on jobs; pausing needs ``django_skipqueue.pause_queue``.
Pause and resume go through the pausing API (queues.py), like ``skipqueue_pause``, and each
one is reported and written to the admin log against the queue's pause row.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.models import ADDITION, DELETION, LogEntry
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from django_skipqueue import queues
from django_skipqueue.admin import charts, subapps
from django_skipqueue.admin.figures import Dashboard, gather
from django_skipqueue.admin.scope import admin_database
from django_skipqueue.compat import InvalidTask
from django_skipqueue.conf import get_settings
from django_skipqueue.durations import format_seconds
from django_skipqueue.models import JobStatus, QueuePause
from django_skipqueue.monitoring.stats import DEPTH_STATUSES

#: Seconds between automatic reloads of the page (``?refresh=0`` turns them off).
REFRESH_SECONDS = 10
PAUSE_PERMISSION = "django_skipqueue.pause_queue"


def dashboard_urls(model_admin: Any) -> list[URLPattern]:
    """The dashboard's URLs, wrapped by the admin site (login, staff, CSRF, no cache)."""
    site = model_admin.admin_site

    def page(request: HttpRequest) -> HttpResponse:
        return dashboard_view(model_admin, request)

    def pause(request: HttpRequest) -> HttpResponse:
        return pause_view(model_admin, request)

    return [
        path("dashboard/", site.admin_view(page), name="django_skipqueue_job_dashboard"),
        path(
            "dashboard/pause/", site.admin_view(require_POST(pause)), name="django_skipqueue_pause"
        ),
    ]


def dashboard_view(model_admin: Any, request: HttpRequest) -> TemplateResponse:
    """Render the dashboard for users who may view jobs."""
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    board = gather()
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Queue dashboard",
        "opts": model_admin.opts,
        "board": board,
        "queues": [_queue_row(board, queue) for queue in board.report.queues],
        "statuses": DEPTH_STATUSES,
        "refresh": _refresh(request),
        "can_pause": request.user.has_perm(PAUSE_PERMISSION),
        "reaper_age": format_seconds(board.report.reaper_age),
        "stale_seconds": format_seconds(get_settings().WORKER_STALE_SECONDS),
        "others": subapps.as_context(admin_database()),
    }
    return TemplateResponse(request, "admin/django_skipqueue/dashboard.html", context)


def _queue_row(board: Dashboard, queue: Any) -> dict[str, Any]:
    """Everything one queue's row and chart need, formatted."""
    ref = board.refs.get(queue.name)
    return {
        "status": queue,
        "counts": [(status, queue.counts[status]) for status in DEPTH_STATUSES],
        "oldest_ready": format_seconds(queue.oldest_ready_age),
        "latency": _latency(queue.claim_p50_ms, queue.claim_p95_ms),
        "chart": charts.throughput_chart(board.throughput.get(queue.name, []), queue.name),
        "backend": ref.backend if ref else None,
        "pause": board.pauses.get(queue.name),
        # Ready jobs that nobody claims when no live worker serves the queue.
        "waiting": queue.counts[JobStatus.READY].value if not queue.live_workers else 0,
    }


def _latency(p50: float | None, p95: float | None) -> str:
    if p50 is None or p95 is None:
        return "-"
    return f"≤{p50:g} / ≤{p95:g} ms"


def _refresh(request: HttpRequest) -> int:
    try:
        return max(0, min(int(request.GET.get("refresh", REFRESH_SECONDS)), 3600))
    except ValueError:
        return REFRESH_SECONDS


def pause_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """Pause or resume one queue through the pausing API; report and log it."""
    if not request.user.has_perm(PAUSE_PERMISSION):
        raise PermissionDenied
    queue = request.POST.get("queue", "")
    backend = request.POST.get("backend", "default")
    try:
        if request.POST.get("operation") == "pause":
            _pause(model_admin, request, queue, backend)
        else:
            _resume(model_admin, request, queue, backend)
    except (ValueError, InvalidTask) as error:  # an unknown backend or queue
        model_admin.message_user(request, str(error), messages.ERROR)
    return HttpResponseRedirect(reverse("admin:django_skipqueue_job_dashboard"))


def _pause(model_admin: Any, request: HttpRequest, queue: str, backend: str) -> None:
    reason = request.POST.get("reason", "").strip() or "paused from the admin"
    if not queues.pause(queue, backend=backend, reason=reason, by=str(request.user)):
        model_admin.message_user(request, f"Queue {queue} was already paused.", messages.WARNING)
        return
    row = QueuePause.objects.using(admin_database()).filter(queue_name=queue)
    _log(request, list(row), ADDITION, f"Paused queue {queue}: {reason}")
    model_admin.message_user(
        request, f"Queue {queue} paused: workers stop claiming from it.", messages.SUCCESS
    )


def _resume(model_admin: Any, request: HttpRequest, queue: str, backend: str) -> None:
    rows = list(QueuePause.objects.using(admin_database()).filter(queue_name=queue))
    if not queues.resume(queue, backend=backend):
        model_admin.message_user(request, f"Queue {queue} was not paused.", messages.WARNING)
        return
    _log(request, rows, DELETION, f"Resumed queue {queue}.")
    model_admin.message_user(request, f"Queue {queue} resumed.", messages.SUCCESS)


def _log(request: HttpRequest, rows: list[QueuePause], flag: int, message: str) -> None:
    user_id = request.user.pk
    if rows and user_id is not None:
        LogEntry.objects.log_actions(user_id, rows, flag, change_message=message)
