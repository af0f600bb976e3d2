"""Check docs/howto/schedule-maintenance.md: the page's retention is what the purge applies.

With the retention sample appended to the settings, ``skipqueue_purge`` (run by the page just
before this check) deleted exactly the finished jobs of ``maintenance_history.py`` older than
their status's retention, and kept the younger ones and the unfinished jobs. Then, with the
``SKIPQUEUE_PURGE_INTERVAL`` sample also in the settings, the maintenance loop that every
``runworkers`` supervisor runs purges a fresh history the same way.
"""

import json
import runpy
from pathlib import Path

from django_skipqueue.models import Job
from django_skipqueue.worker import default_maintenance


def check_history() -> None:
    history = json.loads(Path("history.json").read_text())
    unfinished = [history["due"], history["expired"], history["waiting"]]
    left = set(Job.objects.values_list("pk", flat=True))
    assert not left & set(history["purged"]), "a job older than its retention is left"
    missing = set(history["kept"] + unfinished) - left
    assert not missing, f"jobs within their retention were purged: {sorted(missing)}"


check_history()
Job.objects.all().delete()
runpy.run_path("checks/maintenance_history.py")
loop = default_maintenance("default", "purge-check")
assert loop is not None
loop.run_due()
check_history()
