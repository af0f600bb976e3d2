"""Check docs/howto/run-workers.md with the page's own ``runworkers --processes 2 --threads 4``.

It runs in the background while this check enqueues: the timeout sample's options are kept and
an attempt past its timeout fails with ``JobTimedOut`` and its process is replaced; a failing
job ends ``failed`` after its attempts, with the errors the retries sample reads (saved as
retries.py); the ``reindex`` sample stops between batches once cancellation is requested (run
to its end, its 40 batches, it would succeed).
"""

import time
from pathlib import Path

from checks import chores
from checks.common import wait_until
from django.conf import settings
from shop import invoices, search

from django_skipqueue.models import Job, WorkerProcess

FINAL = ("succeeded", "failed", "cancelled")


def finished(result) -> Job:
    wait_until(lambda: Job.objects.get(pk=result.id).status in FINAL, what=f"job {result.id}")
    result.refresh()
    return Job.objects.get(pk=result.id)


invoice = finished(invoices.render_invoice.enqueue(5))
fields = (invoice.status, invoice.timeout_seconds, invoice.max_attempts)
assert fields == ("succeeded", 120, 3), fields

processes = set(WorkerProcess.objects.filter(role="worker").values_list("pid", flat=True))
slow = chores.nap.using(timeout=1, max_attempts=1).enqueue(5)
finished(slow)
assert slow.status == "FAILED", slow.status
assert slow.errors[-1].exception_class_path == "django_skipqueue.exceptions.JobTimedOut"
replaced = WorkerProcess.objects.filter(role="worker").exclude(pid__in=processes)
wait_until(replaced.exists, what="a fresh worker process after the timeout")

stock = chores.sync_stock.enqueue("X-1")
finished(stock)
lookup, expression = Path("retries.py").read_text().strip().splitlines()
namespace = {"sync_stock": chores.sync_stock, "job_id": stock.id}
exec(lookup, namespace)
errors = eval(expression, namespace)
assert errors == ["builtins.ConnectionError"] * settings.SKIPQUEUE_MAX_ATTEMPTS, errors

reindex = search.reindex.using(lease=3).enqueue(3)
wait_until(Job.objects.filter(pk=reindex.id, status="claimed").exists, what="the claim")
time.sleep(0.5)  # a few batches in: requested before its start, it would not run at all
Job.objects.filter(pk=reindex.id).update(cancel_requested=True)
job = finished(reindex)
assert job.status == "cancelled", (job.status, job.return_value)
