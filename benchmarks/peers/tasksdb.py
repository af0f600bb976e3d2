"""django-tasks-db: the database backend for Django Tasks and its ``db_worker``."""

from benchmarks.peers.base import *  # noqa: F403
from benchmarks.peers.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
