"""skipqueue_scheduler, for schedulers apart from the workers: two at once, stopped by SIGTERM."""

from __future__ import annotations

import itertools
import signal
import subprocess
import time
from datetime import timedelta

import pytest

from django_skipqueue.scheduling.models import Missed, Schedule, Tick
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]


def test_two_scheduler_commands_fire_each_second_once(child_env, manage_py):
    Schedule.objects.create(name="every-second", task_path="tests.support.tasks.noop",
                            interval_seconds=1, missed=Missed.CATCH_UP)  # fmt: skip
    command = [*manage_py, "skipqueue_scheduler", "--interval", "0.2"]
    schedulers = [
        subprocess.Popen(
            command, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for _ in range(2)
    ]
    try:
        wait_for(lambda: Tick.objects.count() >= 2, 60, what="first ticks")
        time.sleep(6)
    finally:
        for process in schedulers:
            process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=30)[0] for process in schedulers]
    assert [process.returncode for process in schedulers] == [0, 0], outputs
    assert all(output.rstrip().endswith("stopped") for output in outputs), outputs
    times = list(Tick.objects.order_by("tick_at").values_list("tick_at", flat=True))
    assert len(times) >= 6
    assert all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(times)), times
    assert len(set(Tick.objects.values_list("job_id", flat=True))) == len(times)
