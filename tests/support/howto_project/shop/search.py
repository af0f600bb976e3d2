"""What the cancellation samples call but do not define: ``batches`` and ``index``.

The pages' ``rebuild_index`` and ``reindex`` tasks are appended to this module (their samples
use ``task`` without importing it). ``index`` writes each batch to ``indexed.txt`` and takes a
tenth of a second, so a check can request cancellation while a job is halfway through.
"""

import time
from pathlib import Path

from django.conf import settings

from django_skipqueue.tasks import task  # noqa: F401 (used by the samples appended below)

BATCHES = 40


def batches(shard: int) -> list[list[int]]:
    return [[shard * 1000 + number] for number in range(BATCHES)]


def index(batch: list[int]) -> None:
    with (Path(settings.BASE_DIR) / "indexed.txt").open("a") as file:
        file.write(f"{batch[0]}\n")
    time.sleep(0.1)


def indexed() -> list[int]:
    path = Path(settings.BASE_DIR) / "indexed.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []
