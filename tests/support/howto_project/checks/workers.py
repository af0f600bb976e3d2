"""Check docs/reference/workers.md: its "Running workers from code" sample drains the queue.

The sample (saved as supervise.py) runs in this process: its supervisor forks two workers,
which run every ready job of the ``default`` queue to success and exit (``burst=True``),
leaving the rows the page describes: one supervisor and two workers, stopped.
"""

import runpy

from checks.chores import ran, record

from django_skipqueue.models import Job, WorkerProcess

labels = [f"job-{number}" for number in range(12)]
for label in labels:
    record.enqueue(label)
record.using(queue_name="emails").enqueue("not-served")

runpy.run_path("supervise.py")

statuses = dict(Job.objects.values_list("args__0", "status"))
assert statuses == {**dict.fromkeys(labels, "succeeded"), "not-served": "ready"}, statuses
assert sorted(ran()) == sorted(labels), ran()
roles = sorted(WorkerProcess.objects.values_list("role", flat=True))
assert roles == ["supervisor", "worker", "worker"], roles
