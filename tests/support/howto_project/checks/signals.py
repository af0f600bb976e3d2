"""Check docs/reference/signals.md: what each signal carries and when, with a real worker.

The page's receiver is in shop/metrics.py; importing it connects it. The worker runs in
this process (``Worker(...).run()``, docs/reference/workers.md) so that receivers connected here
hear ``task_started`` and ``task_finished``.
"""

from checks.chores import record, sync_stock
from prometheus_client import REGISTRY
from shop.metrics import count_failures  # noqa: F401 (connects the page's receiver)

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import task_enqueued, task_finished, task_started
from django_skipqueue.worker import Worker, WorkerOptions

heard: list[tuple[str, str, str]] = []
started = {}


def listen(name):
    def receiver(sender, task_result, **kwargs):
        assert sender is SkipQueueBackend, sender
        heard.append((name, task_result.args[0], task_result.status))
        if name == "started":
            started[task_result.id] = task_result
        elif name == "finished":
            assert task_result is started[task_result.id], "not the object task_started carried"

    return receiver


receivers = {name: listen(name) for name in ("enqueued", "started", "finished")}
task_enqueued.connect(receivers["enqueued"])
task_started.connect(receivers["started"])
task_finished.connect(receivers["finished"])

record.enqueue("ok")
sync_stock.using(max_attempts=2).enqueue("bad")
record.using(idempotency_key="once").enqueue("keyed")
record.using(idempotency_key="once").enqueue("keyed")  # finds the first: no signal
assert heard == [("enqueued", arg, "READY") for arg in ("ok", "bad", "keyed")], heard

heard.clear()
options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False)
assert Worker(options, owner="signals-check").run() == 0
# Per job, in order; across jobs, claiming ahead may start the next job before the previous
# one's outcome is committed (and its task_finished sent): the page says so.
expected = {
    "ok": [("started", "RUNNING"), ("finished", "SUCCESSFUL")],
    "bad": [
        ("started", "RUNNING"),
        ("finished", "READY"),
        ("started", "RUNNING"),
        ("finished", "FAILED"),
    ],
    "keyed": [("started", "RUNNING"), ("finished", "SUCCESSFUL")],
}
for arg, signals in expected.items():
    got = [(name, status) for name, job_arg, status in heard if job_arg == arg]
    assert got == signals, (arg, heard)
assert len(heard) == sum(map(len, expected.values())), heard
counted = REGISTRY.get_sample_value("shop_failed_jobs_total")
assert counted == 1, f"the page's receiver counted {counted}, not the one final failure"
