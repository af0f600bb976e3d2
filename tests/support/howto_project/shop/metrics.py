"""What the signals sample calls but does not define: ``failures_counter``.

It stands in for a metrics client's counter (Prometheus, StatsD): each ``inc()`` appends a line
to ``failures.txt``, so a check sees the increments of any process. The page's receiver is
appended to this module.
"""

import os
from pathlib import Path

from django.conf import settings


class FileCounter:
    def inc(self) -> None:
        with (Path(settings.BASE_DIR) / "failures.txt").open("a") as file:
            file.write(f"{os.getpid()}\n")

    def value(self) -> int:
        path = Path(settings.BASE_DIR) / "failures.txt"
        return len(path.read_text().split()) if path.exists() else 0


failures_counter = FileCounter()
