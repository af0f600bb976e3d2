"""The metrics view: the database gauges in Prometheus's text format, never open to anyone.

Mount it in ``urls.py``::

    path("skipqueue/metrics", django_skipqueue.monitoring.views.metrics)

A request passes with ``Authorization: Bearer <SKIPQUEUE_METRICS_TOKEN>`` (what Prometheus
sends with ``authorization: {credentials: ...}`` in its scrape config), or from a logged-in staff
user (to look at it in a browser). Anything else gets 403: the figures name queues and tasks,
and each scrape runs queries.
"""

from __future__ import annotations

import hmac

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import task_backends
from django_skipqueue.conf import get_settings


@never_cache
@require_GET
def metrics(request: HttpRequest, backend: str = "default") -> HttpResponse:
    """Render the gauges of ``backend``'s database for an allowed scraper."""
    if not allowed(request):
        return HttpResponseForbidden(
            "Metrics need a staff login or the SKIPQUEUE_METRICS_TOKEN bearer token.\n",
            content_type="text/plain",
        )
    from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

    from django_skipqueue.monitoring.prometheus import registry_for

    queue_backend = task_backends[backend]
    if not isinstance(queue_backend, SkipQueueBackend):
        raise Http404(f"Task backend {backend!r} is not a SkipQueueBackend.")
    registry = registry_for(queue_backend.database, queue_backend.queue_names)
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def allowed(request: HttpRequest) -> bool:
    """A staff user, or the configured bearer token (compared in constant time)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    token = get_settings().METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.encode(), token.encode())
