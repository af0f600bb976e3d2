"""The Django admin of the job queue: jobs and failures, safe actions, and the queue dashboard."""

from __future__ import annotations

from django.contrib import admin

from ..models import Job
from .jobs import JobAdmin

# Worker processes are listed on the dashboard, which marks them live or stale.
admin.site.register(Job, JobAdmin)

__all__ = ["JobAdmin"]
