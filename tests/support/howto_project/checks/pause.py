"""Check docs/howto/monitor-and-pause.md's pause() and resume() with real workers.

The sample is saved as incident.py; its ``...`` line stands for the incident, so the check runs
the lines before it (pause), sees that a worker leaves the paused queue alone but serves the
others, then runs the lines after it (resume) and sees the backlog drain.
"""

import subprocess
import sys
from pathlib import Path

from checks.chores import ran, record

from django_skipqueue.models import QueuePause

before, after = Path("incident.py").read_text().split("\n...\n")
BURST = [sys.executable, "manage.py", "runworkers", "--burst", "--processes", "1"]


def burst() -> None:
    done = subprocess.run(BURST, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


exec(before)
pauses = list(QueuePause.objects.values_list("queue_name", "reason", "paused_by"))
assert pauses == [("emails", "SMTP provider outage", "circuit-breaker")], pauses
waiting = record.using(queue_name="emails").enqueue("1")
other = record.enqueue("2")
burst()
for result in (waiting, other):
    result.refresh()
assert (waiting.status, other.status) == ("READY", "SUCCESSFUL"), (waiting.status, other.status)

exec(after)
assert not QueuePause.objects.exists()
burst()
waiting.refresh()
assert waiting.status == "SUCCESSFUL", waiting.status
assert ran() == ["2", "1"], ran()
