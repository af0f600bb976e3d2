"""Settings of the project the how-to pages' samples run in.

tests/support/projects.py copies this folder and writes ``project.json``: the database the page
runs on (SQLite or the suite's MySQL server). A page adds its own apps to INSTALLED_APPS.
"""

import json
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PROJECT = json.loads((BASE_DIR / "project.json").read_text())

SECRET_KEY = "insecure-how-to-samples"
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# As a new project has them: the URLs a page mounts, served by runserver on this machine.
ROOT_URLCONF = "mysite.urls"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django_skipqueue",
]
DATABASES = {"default": PROJECT["database"]}
TASKS = {
    "default": {
        "BACKEND": "django_skipqueue.backend.SkipQueueBackend",
        "QUEUES": ["default", "emails", "outbox"],
    }
}
# Retries at once and few of them, so that a sample's failing job ends within a burst run.
SKIPQUEUE_RETRY_BACKOFF = 0
SKIPQUEUE_MAX_ATTEMPTS = 3
# The checks' own tasks (checks/chores.py): what a check enqueues to watch the page's workers.
SKIPQUEUE_TASK_MODULES = ["checks"]
