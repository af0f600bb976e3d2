"""The Django admin of the job queue: jobs and failures, safe actions, and the queue dashboard.

Runs in the web process. Must not import ``worker``, ``maintenance`` or ``management``: it
reads through ``monitoring`` and changes jobs only through state-guarded operations.
``readonly.py`` is the read-only admin base the optional apps share.
"""

from __future__ import annotations

from django.contrib import admin

from django_skipqueue.admin.jobs import JobAdmin
from django_skipqueue.models import Job

# Worker processes are listed on the dashboard, which marks them live or stale.
admin.site.register(Job, JobAdmin)

__all__ = ["JobAdmin"]
