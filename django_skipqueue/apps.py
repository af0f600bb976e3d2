from __future__ import annotations

from django.apps import AppConfig


class SkipQueueConfig(AppConfig):
    name = "django_skipqueue"
    verbose_name = "Job queue"
    default_auto_field = "django.db.models.BigAutoField"
