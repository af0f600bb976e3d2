"""django-ox: a database backend for Django Tasks with leases (package defaults)."""

from benchmarks.peers.base import *  # noqa: F403
from benchmarks.peers.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_ox"]
TASKS = {"default": {"BACKEND": "django_ox.backend.OxBackend"}}
