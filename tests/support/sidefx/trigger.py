"""Importing this module records that it happened: resolution must never import it."""

import os

os.environ["SKIPQUEUE_SIDEFX_IMPORTED"] = "1"
