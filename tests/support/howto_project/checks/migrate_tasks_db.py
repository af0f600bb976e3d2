"""Check docs/howto/migrate.md: the move script takes django-tasks-db's waiting jobs across, whole.

The backlog is made by django-tasks-db's own backend while it is the project's ``default``
backend, as before the cut-over (its rows name that alias); afterwards ``default`` is the
SkipQueueBackend again, as after it. The page's script is saved as move_jobs.py.
"""

import datetime as dt
import runpy

from checks.chores import ran, record
from checks.common import burst
from django.test import override_settings
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from django_skipqueue.compat import InvalidTask
from django_skipqueue.models import Job

OLD_BACKEND = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default", "emails", "legacy"],
    }
}
later = timezone.now() + dt.timedelta(hours=1)
with override_settings(TASKS=OLD_BACKEND):
    record.enqueue("plain")
    record.using(priority=20, queue_name="emails").enqueue(label="urgent")
    record.using(run_after=later).enqueue("later")
    finished = record.enqueue("finished")
    legacy = record.using(queue_name="legacy").enqueue("legacy")
DBTaskResult.objects.filter(pk=finished.id).update(status="SUCCESSFUL")

move_waiting_jobs = runpy.run_path("move_jobs.py")["move_waiting_jobs"]

# A queue the new backend does not have: the batch stays whole where it was.
try:
    move_waiting_jobs(batch=10)
except InvalidTask:
    pass
else:
    raise AssertionError("a job on an unknown queue was accepted")
assert not Job.objects.exists(), "a failed batch left jobs in the new queue"
assert DBTaskResult.objects.filter(status="READY").count() == 4, "a failed batch lost jobs"

DBTaskResult.objects.filter(pk=legacy.id).delete()
assert move_waiting_jobs(batch=2) == 3  # two batches, the second one short
assert not DBTaskResult.objects.filter(status="READY").exists()
assert DBTaskResult.objects.filter(pk=finished.id).exists(), "history is not moved"

jobs = {job.args[0] if job.args else job.kwargs["label"]: job for job in Job.objects.all()}
assert sorted(jobs) == ["later", "plain", "urgent"], sorted(jobs)
assert jobs["urgent"].kwargs == {"label": "urgent"} and jobs["urgent"].args == []
assert (jobs["urgent"].queue_name, jobs["urgent"].priority) == ("emails", 20)
assert (jobs["plain"].queue_name, jobs["plain"].priority) == ("default", 0)
assert jobs["later"].status == "scheduled"
assert abs(jobs["later"].run_after - later) < dt.timedelta(seconds=1), jobs["later"].run_after
assert jobs["plain"].status == "ready" and jobs["plain"].run_after is None

burst("--queues", "default,emails")
assert sorted(ran()) == ["plain", "urgent"], ran()  # "later" waits for its hour

# Moving while the rows' alias still points at django-tasks-db: the jobs go to the alias given.
Job.objects.all().delete()
both = {**OLD_BACKEND, "queue": {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}}
with override_settings(TASKS=both):
    record.enqueue("old alias")
    assert move_waiting_jobs(backend="queue") == 1
assert not DBTaskResult.objects.filter(status="READY").exists(), "re-enqueued where it was"
assert [job.args for job in Job.objects.all()] == [["old alias"]]
