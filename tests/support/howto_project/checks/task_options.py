"""Check docs/reference/task-options.md: each option does what the page says, with real workers.

The page's first sample defines shop/receipts.py's task and enqueues it for order 42 with an
idempotency key; the check enqueues it the same way again. The ``rebuild_index`` sample is
shop/indexing.py. ``transactional`` is checked by checks/exactly_once.py, ``timeout`` by
checks/run_workers.py.
"""

import datetime as dt
import time

from checks.chores import ran, record, sync_prices, sync_stock
from checks.common import burst, finish, start_burst, wait_until
from django.conf import settings
from django.utils import timezone
from shop import indexing
from shop.receipts import send_receipt

from django_skipqueue.compat import InvalidTask
from django_skipqueue.exceptions import InvalidTaskOption
from django_skipqueue.models import Job


def enqueue_receipt():
    """The page's enqueue, once more."""
    return send_receipt.using(idempotency_key="receipt-42").enqueue(42)


job = Job.objects.get(task_path="shop.receipts.send_receipt")
receipt = enqueue_receipt()
assert receipt.id == str(job.pk), "the idempotency key let a second job in"
fields = (job.queue_name, job.priority, job.max_attempts, job.timeout_seconds, job.idempotency_key)
assert fields == ("emails", 10, 3, 30, "receipt-42"), fields
assert job.lease_seconds == 60, "lease=None takes SKIPQUEUE_LEASE_SECONDS (60)"

# Invalid values raise at enqueue, before anything is inserted.
jobs = Job.objects.count()
for option, value in [("max_attempts", 0), ("lease", 86401), ("retry_backoff", -1)]:
    try:
        record.using(**{option: value}).enqueue("invalid")
    except InvalidTaskOption:
        pass
    else:
        raise AssertionError(f"{option}={value} was accepted")
try:
    record.using(run_after=dt.datetime(2030, 1, 1)).enqueue("naive")
except InvalidTask:
    pass
else:
    raise AssertionError("a naive run_after was accepted")
assert Job.objects.count() == jobs, "an invalid enqueue inserted a row"

# priority: higher first, then the oldest; run_after: scheduled until due; max_attempts and
# retry_backoff: attempts before "failed", and the delay before the next one.
record.using(priority=-5).enqueue("low")
record.enqueue("first")
record.enqueue("second")
record.using(priority=50).enqueue("high")
soon = record.using(run_after=timezone.now() + dt.timedelta(seconds=2)).enqueue("soon")
later = record.using(run_after=timezone.now() + dt.timedelta(hours=1)).enqueue("later")
assert Job.objects.get(pk=soon.id).status == "scheduled"
spent = sync_stock.using(max_attempts=2, idempotency_key="stock-A1").enqueue("A1")
backing_off = sync_prices.using(max_attempts=4).enqueue("B2")
default = record.enqueue("default")
assert Job.objects.get(pk=default.id).max_attempts == settings.SKIPQUEUE_MAX_ATTEMPTS

burst("--threads", "1")
# "soon" runs once due: last when the burst began within its 2 seconds, in id order among the
# ready jobs when the machine was slower than that. Either way, never before it was due.
order = ran()
ready_order = [label for label in order if label != "soon"]
assert ready_order == ["high", "first", "second", "default", "low"], order
assert "soon" in order, order
soon_job = Job.objects.get(pk=soon.id)
assert soon_job.started_at >= soon_job.run_after, "a scheduled job ran before it was due"
assert Job.objects.get(pk=later.id).status == "scheduled"
spent.refresh()
errors = [error.exception_class_path for error in spent.errors]
assert (spent.status, errors) == ("FAILED", ["builtins.ConnectionError"] * 2), spent.status
waiting = Job.objects.get(pk=backing_off.id)
delay = (waiting.run_after - waiting.last_attempted_at).total_seconds()
assert (waiting.status, waiting.attempts) == ("scheduled", 1), waiting.status
assert 19 <= delay <= 41, f"retry_backoff=40 waits 20 to 40 s before attempt 2, not {delay}"

# idempotency_key: a failed holder frees the key, a succeeded one keeps it.
assert sync_stock.using(idempotency_key="stock-A1").enqueue("A1").id != spent.id
assert enqueue_receipt().id == receipt.id
receipt.refresh()
assert receipt.status == "SUCCESSFUL", receipt.status

# takes_context: the sample's task stops between batches once cancellation is requested.
rebuild = indexing.rebuild_index.using(lease=3).enqueue(7)
worker = start_burst("--threads", "1", "--queues", "default")
wait_until(Job.objects.filter(pk=rebuild.id, status="claimed").exists, what="the claim")
time.sleep(0.5)  # a few batches in: requested before its start, it would not run at all
Job.objects.filter(pk=rebuild.id).update(cancel_requested=True)
finish(worker)
rebuild.refresh()
cancelled = Job.objects.get(pk=rebuild.id)
last_error = rebuild.errors[-1].exception_class_path
assert (cancelled.status, last_error) == ("cancelled", "django_skipqueue.exceptions.JobCancelled")
