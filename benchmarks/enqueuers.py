"""How each system enqueues: one by one, many in one transaction, and its own bulk API.

Imported only inside a system's interpreter (see agent.py), after ``django.setup()``
for the Django-based ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable

Enqueue = Callable[[int], None]


def for_system(system: str, mode: str) -> Enqueue | None:
    """Return the enqueuer for ``system`` in ``mode`` (single, txn, bulk), or None if absent."""
    return ENQUEUERS[system].get(mode)


def probe_sender(system: str) -> Callable[[str], None]:
    """Return a function that enqueues one probe job (autocommit) for the latency scenario."""
    return PROBES[system]()


def _in_transaction(single: Callable[[], None]) -> Enqueue:
    def run(count: int) -> None:
        from django.db import transaction

        with transaction.atomic():
            for _ in range(count):
                single()

    return run


def _one_by_one(single: Callable[[], None]) -> Enqueue:
    def run(count: int) -> None:
        for _ in range(count):
            single()

    return run


def _django_task_single() -> None:
    from benchmarks.tasks import noop

    noop.enqueue()


def _ours_bulk(count: int) -> None:
    from benchmarks.tasks import noop
    from django_skipqueue.compat import task_backends

    task_backends["default"].enqueue_many([(noop, (), {})] * count)  # type: ignore[attr-defined]


def _ox_bulk(count: int) -> None:
    from django_ox.bulk import enqueue_many

    from benchmarks.tasks import noop

    enqueue_many(noop, [((), {})] * count)


def _q2_single() -> None:
    from django_q.tasks import async_task

    async_task("benchmarks.jobs.noop_function")


def _celery_single() -> None:
    from benchmarks.peers.celery_app import noop

    noop.delay()


def _raw_bulk(count: int) -> None:
    from django.db import connection

    row = (
        "('default', 0, 'ready', 'benchmarks.tasks.noop', '[]', '{}', 0, 1, 60, 0, "
        "UTC_TIMESTAMP(6), '[]', '[]')"
    )
    head = (
        "INSERT INTO skipqueue_job (queue_name, priority, status, task_path, args, kwargs, "
        "attempts, max_attempts, lease_seconds, cancel_requested, enqueued_at, errors, "
        "worker_ids) VALUES "
    )
    with connection.cursor() as cursor:
        for start in range(0, count, 1000):
            cursor.execute(head + ",".join([row] * min(1000, count - start)))


_DJANGO = {
    "single": _one_by_one(_django_task_single),
    "txn": _in_transaction(_django_task_single),
}
ENQUEUERS: dict[str, dict[str, Enqueue]] = {
    "ours": {**_DJANGO, "bulk": _ours_bulk},
    "raw": {
        "single": _one_by_one(lambda: _raw_insert("benchmarks.tasks.noop", [])),
        "bulk": _raw_bulk,
    },
    "tasksdb": dict(_DJANGO),
    "ox": {**_DJANGO, "bulk": _ox_bulk},
    "q2": {"single": _one_by_one(_q2_single), "txn": _in_transaction(_q2_single)},
    "celery": {"single": _one_by_one(_celery_single)},
}


def _django_probe() -> Callable[[str], None]:
    from benchmarks.tasks import probe

    def send(key: str) -> None:
        probe.enqueue(key)

    return send


def _q2_probe() -> Callable[[str], None]:
    from django_q.tasks import async_task

    return lambda key: async_task("benchmarks.jobs.probe_function", key)


def _celery_probe() -> Callable[[str], None]:
    from benchmarks.peers.celery_app import probe

    return lambda key: probe.delay(key)


RAW_INSERT = (
    "INSERT INTO skipqueue_job (queue_name, priority, status, task_path, args, kwargs, "
    "attempts, max_attempts, lease_seconds, cancel_requested, enqueued_at, errors, "
    "worker_ids) VALUES ('default', 0, 'ready', %s, %s, '{}', 0, 1, 60, 0, UTC_TIMESTAMP(6), "
    "'[]', '[]')"
)


def _raw_insert(path: str, args: list[str]) -> None:
    """One INSERT in autocommit: the raw reference's single enqueue."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(RAW_INSERT, [path, json.dumps(args)])


def _raw_probe() -> Callable[[str], None]:
    return lambda key: _raw_insert("benchmarks.tasks.probe", [key])


PROBES: dict[str, Callable[[], Callable[[str], None]]] = {
    "ours": _django_probe,
    "raw": _raw_probe,
    "tasksdb": _django_probe,
    "ox": _django_probe,
    "q2": _q2_probe,
    "celery": _celery_probe,
}
