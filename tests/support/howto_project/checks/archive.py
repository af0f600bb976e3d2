"""Check docs/howto/schedule-maintenance.md's ``skipqueue_purge --archive --chunk 1000``.

Run after it, on a fresh history of ``maintenance_history.py``: each job older than its
retention moved to the archive table (same id, same status), and nothing else did.
"""

import json
from pathlib import Path

from django_skipqueue.models import Job, JobArchive

history = json.loads(Path("history.json").read_text())
archived = dict(JobArchive.objects.values_list("pk", "status"))
assert sorted(archived) == sorted(history["purged"]), (archived, history)
assert not Job.objects.filter(pk__in=history["purged"]).exists(), "an archived job is left"
assert Job.objects.filter(pk__in=history["kept"]).count() == len(history["kept"])
assert set(archived.values()) == {"succeeded", "cancelled", "failed"}, archived
