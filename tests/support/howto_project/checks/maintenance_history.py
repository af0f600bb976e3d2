"""Set up docs/howto/schedule-maintenance.md's checks: jobs for the reaper and for the purge.

A deferred job already due and a claimed job whose lease expired (``checks/reap.py`` reads
them back after ``skipqueue_reap --json``), and finished jobs on both sides of the page's
retention (``checks/purge.py`` reads them back after ``skipqueue_purge``). The ids go to
``history.json``.
"""

import json
from datetime import timedelta
from pathlib import Path

from checks.chores import record
from django.utils import timezone

from django_skipqueue.models import Job

now = timezone.now()
#: (status, age in days) of each finished job, and whether the page's retention purges it.
FINISHED = [
    ("succeeded", 3, True),
    ("succeeded", 1, False),
    ("cancelled", 3, True),
    ("cancelled", 1, False),
    ("failed", 31, True),
    ("failed", 10, False),
]


def job(label: str, **fields) -> int:
    result = record.enqueue(label)
    Job.objects.filter(pk=result.id).update(**fields)
    return int(result.id)


history = {
    "due": job("due", status="scheduled", run_after=now - timedelta(seconds=5)),
    "expired": job(
        "expired",
        status="claimed",
        owner="gone:1:dead",
        attempts=1,
        max_attempts=3,
        lease_until=now - timedelta(minutes=5),
    ),
    "waiting": job("waiting"),
    "purged": [],
    "kept": [],
}
for status, days, purged in FINISHED:
    finished_at = now - timedelta(days=days)
    pk = job(f"{status}-{days}d", status=status, finished_at=finished_at, attempts=1)
    history["purged" if purged else "kept"].append(pk)
Path("history.json").write_text(json.dumps(history))
