"""Settings for worker processes started by the reliability tests.

The test project's settings, plus any ``SKIPQUEUE_*`` values given as JSON in the environment
variable ``RELIABILITY_SETTINGS`` (short reaper intervals, leases and backoffs that let a fault
scenario finish in seconds). Nothing here is read by the project itself.
"""

from __future__ import annotations

import json
import os

from testproject.settings import *  # noqa: F403

for _name, _value in json.loads(os.environ.get("RELIABILITY_SETTINGS", "{}")).items():
    if not _name.startswith("SKIPQUEUE_"):
        raise ValueError(f"RELIABILITY_SETTINGS may only set SKIPQUEUE_* values, not {_name}")
    globals()[_name] = _value
