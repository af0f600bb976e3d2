"""The test project with ``QUEUES = []``: the backend accepts any queue name."""

from __future__ import annotations

from testproject.settings import *  # noqa: F403
from testproject.settings import TASKS

TASKS = {"default": {**TASKS["default"], "QUEUES": []}}
