"""A stand-in for a message broker: every publish appends one line to ``published.jsonl``.

A file, not a table: a publish is an effect outside the database, so a rolled-back or repeated
attempt would leave its line behind, and the check would see it.
"""

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings


def publish(event_type: str, payload: dict[str, Any], *, message_id: str) -> None:
    message = {"type": event_type, "payload": payload, "id": message_id, "pid": os.getpid()}
    with _path().open("a") as file:
        file.write(json.dumps(message) + "\n")


def published() -> list[dict[str, Any]]:
    path = _path()
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _path() -> Path:
    return Path(settings.BASE_DIR) / "published.jsonl"
