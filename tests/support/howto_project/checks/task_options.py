"""Check docs/reference/task-options.md: each option does what the page says, with real workers.

The page's first sample is saved as receipts.py: its task goes to shop/receipts.py (a module the
workers import), and its last statement, the enqueue, runs here with an order at hand. The
``rebuild_index`` sample is appended to shop/search.py. ``transactional`` is checked by
checks/exactly_once.py, ``timeout`` by checks/run_workers.py.
"""

import datetime as dt
from decimal import Decimal
from pathlib import Path

from checks.chores import ran, record, sync_prices, sync_stock
from checks.common import burst, finish, start_burst, wait_until
from django.conf import settings
from django.utils import timezone
from orders.models import Cart, Order
from shop import search

from django_skipqueue.compat import InvalidTask
from django_skipqueue.exceptions import InvalidTaskOption
from django_skipqueue.models import Job

definition, call = Path("receipts.py").read_text().rsplit("\n\n\n", 1)
Path("shop/receipts.py").write_text(definition + "\n")
from shop.receipts import send_receipt  # noqa: E402 (written just above)

cart = Cart.objects.create(customer="ada", total=Decimal("9.99"))
order = Order.objects.create(cart=cart, customer="ada", total=cart.total)
namespace = {"send_receipt": send_receipt, "order": order}
receipt, again = eval(call, namespace), eval(call, namespace)
assert receipt.id == again.id, "the idempotency key let a second job in"
job = Job.objects.get(task_path="shop.receipts.send_receipt")
fields = (job.queue_name, job.priority, job.max_attempts, job.timeout_seconds, job.idempotency_key)
assert fields == ("emails", 10, 3, 30, f"receipt-{order.pk}"), fields
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
assert eval(call, namespace).id == receipt.id
receipt.refresh()
assert receipt.status == "SUCCESSFUL", receipt.status

# takes_context: the sample's task stops between batches once cancellation is requested.
rebuild = search.rebuild_index.using(lease=3).enqueue(7)
worker = start_burst("--threads", "1", "--queues", "default")
wait_until(lambda: len(search.indexed()) >= 2, what="indexing")
Job.objects.filter(pk=rebuild.id).update(cancel_requested=True)
finish(worker)
rebuild.refresh()
cancelled = Job.objects.get(pk=rebuild.id)
last_error = rebuild.errors[-1].exception_class_path
assert (cancelled.status, last_error) == ("cancelled", "django_skipqueue.exceptions.JobCancelled")
assert len(search.indexed()) < search.BATCHES, "the task ran to the end"
