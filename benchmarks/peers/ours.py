"""django-skipqueue (this project)."""

from benchmarks.peers.base import *  # noqa: F403
from benchmarks.peers.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_skipqueue"]
TASKS = {"default": {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}}
