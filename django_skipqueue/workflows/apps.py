"""The workflows app: batches with callbacks and chains, counted by an outcome listener.

Its ``Extension`` hook adds the batches' row to the admin's queue dashboard.
"""

from __future__ import annotations

from django.apps import AppConfig

from django_skipqueue.extensions import Extension, Panel


class WorkflowsConfig(Extension, AppConfig):
    name = "django_skipqueue.workflows"
    label = "skipqueue_workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Count each batched job's outcome in the transaction that records it (hooks.py)."""
        from django_skipqueue.hooks import register_outcome_listener
        from django_skipqueue.workflows.counting import count

        register_outcome_listener(count)

    def dashboard_panels(self, using: str) -> list[Panel]:
        from django_skipqueue.workflows.extension import dashboard_panels

        return dashboard_panels(using)
