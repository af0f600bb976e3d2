"""Check docs/howto/schedule-maintenance.md: one ``skipqueue_reap`` pass promotes and reaps.

After the page's ``skipqueue_reap --json``, the due deferred job of ``maintenance_history.py``
is ready and the job whose lease expired is ready again, its owner cleared, its attempt spent.
"""

import json
from pathlib import Path

from django_skipqueue.models import Job

history = json.loads(Path("history.json").read_text())
due = Job.objects.get(pk=history["due"])
assert due.status == "ready", due.status
expired = Job.objects.get(pk=history["expired"])
assert (expired.status, expired.owner) == ("ready", None), (expired.status, expired.owner)
