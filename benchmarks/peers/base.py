"""Settings shared by every Django-based system under benchmark."""

from __future__ import annotations

import os

SECRET_KEY = "benchmark-only"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS: list[str] = []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.mysql",
        "NAME": os.environ.get("BENCH_DB", "sq_bench"),
        "USER": "root",
        "HOST": os.environ.get("BENCH_DB_HOST", "127.0.0.1"),
        "PORT": os.environ.get("BENCH_DB_PORT", "3306"),
        # Django's MySQL default isolation is READ COMMITTED; stated for the record.
        "OPTIONS": {"isolation_level": "read committed"},
    }
}

# Every system logs at WARNING, as Celery runs with ``-l WARNING``: Django's own task-signal
# receivers would otherwise write two INFO lines a job to ``django.tasks`` (about 40 us of a
# worker's CPU per job), which the raw loops and Celery do not pay. ``BENCH_LOGGING=default``
# keeps Django's default logging instead: the figures a user gets without a LOGGING setting.
if os.environ.get("BENCH_LOGGING") != "default":
    LOGGING = {
        "version": 1,
        "disable_existing_loggers": False,
        "handlers": {"console": {"class": "logging.StreamHandler"}},
        "root": {"handlers": ["console"], "level": "WARNING"},
        "loggers": {"django.tasks": {"level": "WARNING"}},
    }
