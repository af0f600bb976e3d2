"""Importing this module creates the file SKIPQUEUE_SIDEFX_FILE names: a worker must never
import it for a row whose task path is ``tests.reliability.sidefx_touch`` (it names an
attribute of the package, not a module to import)."""

import os
from pathlib import Path

if os.environ.get("SKIPQUEUE_SIDEFX_FILE"):
    Path(os.environ["SKIPQUEUE_SIDEFX_FILE"]).touch()
