"""Acceptance: a rate limit per key holds in every window and is reached when work waits."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

import pytest

from django_skipqueue.models import Job
from tests.flow.ledger import intervals
from tests.support import flow_tasks as ft
from tests.support.scale import scaled
from tests.support.workers import Runworkers, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked, pytest.mark.slow]

KEYS = 3
RATE = 10
#: Seconds of work per key: 30 on MariaDB, 12 on PostgreSQL (tests/support/scale.py).
SECONDS = scaled(30, 12)


def test_no_window_holds_more_than_the_rate_and_the_rate_is_reached(
    child_env, manage_py, tmp_path
):
    calls = [(ft.rated, [f"k{n % KEYS}", n, 0.01], {}) for n in range(KEYS * RATE * SECONDS)]
    ft.rated.get_backend().enqueue_many(calls)
    # One window's worth per key is admitted at enqueue; the rest waits for its windows.
    assert Job.objects.filter(status="ready").count() == KEYS * RATE
    workers = Runworkers(
        manage_py, child_env, tmp_path / "rate.log",
        "--processes", "2", "--threads", "4", "--queues", "default",
    )  # fmt: skip
    try:
        wait_for(
            lambda: Job.objects.filter(status="succeeded").count() == len(calls),
            timeout=SECONDS + 30, what="every job ran",
        )  # fmt: skip
    finally:
        workers.stop()
    per_key = intervals()
    assert sorted(per_key) == [f"k{n}" for n in range(KEYS)]
    # A start is a claim (docs/discussions/flow-control.md): the claim's time on the database
    # clock, not the moment the task's body ran, which a loaded machine's thread hand-off puts
    # up to seconds later, in the next window.
    claimed_at = dict(Job.objects.values_list("pk", "last_attempted_at"))
    assert not Job.objects.filter(attempts__gt=1).exists()  # one claim per job
    for key, runs in per_key.items():
        # Fixed one-second windows of the database clock, as the limit counts them.
        per_window = Counter(int(claimed_at[job_id].timestamp()) for _, _, job_id in runs)
        assert max(per_window.values()) <= RATE, (key, sorted(per_window.items()))
        # Work waited all along: the windows between the first and the last are full. A start
        # whose claim a stalled worker delays past its window's end (a loaded CI run showed a
        # window of 5 beside full ones) counts in the next window, where it takes the place of
        # one: that start is lost to the key, not to the limit. So the typical window must be
        # full (the median), and stalls may cost at most a fifth of the starts (the mean).
        windows = sorted(per_window)
        middle = [per_window.get(w, 0) for w in range(windows[0] + 1, windows[-1])]
        assert statistics.median(middle) == RATE, (key, middle)
        assert sum(middle) / len(middle) >= 0.8 * RATE, (key, middle)
    by_worker = defaultdict(int)
    for job in Job.objects.all():
        by_worker[job.worker_ids[-1]] += 1
    assert len(by_worker) > 1  # several workers took part
