"""The Django admin of the job queue: jobs and failures, safe actions, and the queue dashboard."""

from __future__ import annotations

from django.contrib import admin

from ..models import Job, WorkerProcess
from .jobs import JobAdmin
from .workers import WorkerProcessAdmin

admin.site.register(Job, JobAdmin)
admin.site.register(WorkerProcess, WorkerProcessAdmin)

__all__ = ["JobAdmin", "WorkerProcessAdmin"]
