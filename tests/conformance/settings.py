"""Settings of the conformance run: the test project's, with Django's one attempt per task."""

from __future__ import annotations

from testproject.settings import *  # noqa: F403

# Django's built-in backends make one attempt; retries are a documented difference of ours,
# and with them a failing task would log and record several attempts where the tests expect one.
SKIPQUEUE_MAX_ATTEMPTS = 1
# The burst workers run in the test's own process: no other process to wake.
SKIPQUEUE_WAKEUP = False
