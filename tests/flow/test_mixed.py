"""Acceptance: in one queue, a saturated key does not hold back the unkeyed jobs."""

from __future__ import annotations

import pytest

from django_skipqueue.models import Job
from testproject.demo.models import FlowLedgerEntry
from tests.support import flow_tasks as ft
from tests.support.workers import Runworkers, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]


def test_unkeyed_jobs_pass_a_saturated_key(child_env, manage_py, tmp_path):
    backend = ft.limited.get_backend()
    # 100 jobs of one key (limit 2, 100 ms each: 5 s at best), enqueued first, then 300
    # unkeyed jobs behind them in the same queue.
    backend.enqueue_many([(ft.limited, ["hot", n, 0.1], {}) for n in range(100)])
    backend.enqueue_many([(ft.plain, ["plain", n, 0.005], {}) for n in range(300)])
    workers = Runworkers(
        manage_py, child_env, tmp_path / "mixed.log",
        "--processes", "2", "--threads", "4", "--queues", "default",
    )  # fmt: skip
    try:
        wait_for(
            lambda: Job.objects.filter(status="succeeded", flow_key__isnull=True).count() == 300,
            timeout=60, what="the unkeyed jobs ran",
        )  # fmt: skip
        # The hot key is still at work: its jobs wait their turn, and only theirs.
        waiting = Job.objects.filter(status="blocked").count()
        assert waiting > 0
        assert not Job.objects.filter(flow_key__isnull=True).exclude(status="succeeded").exists()
        wait_for(
            lambda: Job.objects.filter(status="succeeded").count() == 400, timeout=60,
            what="the hot key drained",
        )  # fmt: skip
    finally:
        workers.stop()
    plain = FlowLedgerEntry.objects.filter(key="plain").order_by("started_at")
    hot = FlowLedgerEntry.objects.filter(key="hot").order_by("started_at")
    # The last unkeyed job started long before the hot key's last job did.
    assert plain.last().started_at < hot.last().started_at
