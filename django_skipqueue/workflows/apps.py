"""The workflows app: batches with callbacks and chains, counted by the job transitions."""

from __future__ import annotations

from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "django_skipqueue.workflows"
    label = "skipqueue_workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"
