"""Owner ids: who holds a claim. Unique per process start, so a restart never looks alike."""

from __future__ import annotations

import os
import secrets
import socket

#: The owner column is 128 characters; the host name gives way first.
MAX_HOST_CHARS = 96


def new_token() -> str:
    """Return the random part of an owner id (fixed by a supervisor before it forks)."""
    return secrets.token_hex(4)


def owner_id(token: str | None = None, *, pid: int | None = None) -> str:
    """Return ``host:pid:token`` for this process, or for ``pid`` (a supervisor's child)."""
    host = socket.gethostname()[:MAX_HOST_CHARS] or "localhost"
    return f"{host}:{os.getpid() if pid is None else pid}:{token or new_token()}"


def pid_of(owner: str) -> int | None:
    """Return the process id an owner id names, or None if it is not one of ours."""
    parts = owner.rsplit(":", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
