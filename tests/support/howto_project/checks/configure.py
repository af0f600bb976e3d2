"""Check docs/howto/configure.md: its settings, appended to the project's, give that backend.

The backend accepts the page's three queues and no other, keeps its jobs on ``DATABASE``, and a
worker started without ``--queues`` serves them in the order of ``QUEUES``.
"""

from checks.chores import ran, record
from checks.common import burst
from django.core.management import call_command

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import InvalidTask, task_backends
from django_skipqueue.models import Job

call_command("check", fail_level="WARNING")
backend = task_backends["default"]
assert isinstance(backend, SkipQueueBackend), backend
assert (backend.queue_names, backend.database) == (["default", "emails", "reports"], "default")
try:
    record.using(queue_name="outbox").enqueue("unlisted")
except InvalidTask:
    pass
else:
    raise AssertionError("a queue that QUEUES does not list was accepted")

for queue in ("reports", "emails", "default"):
    record.using(queue_name=queue).enqueue(queue)
assert sorted(Job.objects.using("default").values_list("queue_name", flat=True)) == [
    "default",
    "emails",
    "reports",
]
burst("--threads", "1")
assert ran() == ["default", "emails", "reports"], ran()
