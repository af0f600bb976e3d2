"""A crash-safe Django Tasks backend on MySQL/MariaDB, built on FOR UPDATE SKIP LOCKED."""

from __future__ import annotations

__version__ = "0.1.0"
