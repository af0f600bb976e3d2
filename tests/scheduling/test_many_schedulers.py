"""Three runworkers supervisors fire one schedule: exactly one job per tick, none missed.

One supervisor runs two hours ahead under ``faketime`` (its wall clock only, as on a host whose
NTP failed: see tests/reliability/test_clock.py); one is killed with SIGKILL, workers and all,
and started again. The schedule ticks every second and catches up (at most 100 ticks), so every
second between the first tick and the last must have exactly one tick row and one job.
"""

from __future__ import annotations

import itertools
import shutil
import signal
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from django_skipqueue.models import Job
from django_skipqueue.scheduling.models import Missed, Schedule, Tick
from tests.reliability.procs import Supervisor, child_env
from tests.reliability.test_clock import assert_clock_is_skewed
from tests.support.workers import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skip_locked,
    pytest.mark.skipif(shutil.which("faketime") is None, reason="needs faketime (apt)"),
]
NOOP = "tests.support.tasks.noop"
FAKETIME = ("faketime", "-f", "+2h")


@pytest.fixture(autouse=True)
def no_supervisor_left() -> object:
    yield
    Supervisor.stop_all()


def supervisor(env: dict[str, str], log: Path, prefix: tuple[str, ...] = ()) -> Supervisor:
    args = ("--processes", "1", "--threads", "2", "--queues", "default")
    return Supervisor(env, log, *args, prefix=prefix)


def run(test_database_url: str, tmp_path: Path, seconds: float) -> dict[str, object]:
    """Run the scenario for ``seconds``; return what the assertions and figures need."""
    Schedule.objects.create(name="every-second", task_path=NOOP, interval_seconds=1,
                            missed=Missed.CATCH_UP, catch_up=100)  # fmt: skip
    env = child_env(test_database_url)
    skewed = {**env, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    assert_clock_is_skewed("+2h", skewed)
    plain = supervisor(env, tmp_path / "a.log")
    killed = supervisor(env, tmp_path / "b.log")
    ahead = supervisor(skewed, tmp_path / "c.log", FAKETIME)
    pids = {"plain": plain.pid, "killed": killed.pid, "ahead": ahead.pid}
    wait_for(lambda: Tick.objects.count() >= 3, 60, what="first ticks")
    started = time.monotonic()
    time.sleep(seconds * 0.3)
    killed.stop(signal.SIGKILL)  # the supervisor and its workers, as a host that dies
    time.sleep(seconds * 0.2)
    restarted = supervisor(env, tmp_path / "b2.log")
    pids["restarted"] = restarted.pid
    time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    for each in (plain, restarted, ahead):
        each.stop(signal.SIGTERM, timeout=30)
    return {"pids": pids, "logs": [p.read_text() for p in sorted(tmp_path.glob("*.log"))]}


def check(outcome: dict[str, object], seconds: float, figures: dict[str, object]) -> None:
    ticks = list(Tick.objects.order_by("tick_at"))
    times = [tick.tick_at for tick in ticks]
    span = int((times[-1] - times[0]).total_seconds())
    assert len(times) == span + 1, "a second without a tick, or two ticks for one second"
    assert all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(times))
    assert span >= seconds - 5, f"ticks stopped early: {span} s of {seconds} s"
    job_ids = [tick.job_id for tick in ticks]
    assert None not in job_ids and len(set(job_ids)) == len(job_ids)
    jobs = Job.objects.filter(task_path=NOOP)
    assert sorted(jobs.values_list("pk", flat=True)) == sorted(job_ids), "a job without a tick"
    pids: dict[str, int] = outcome["pids"]  # type: ignore[assignment]
    by_pid = Counter(int(tick.scheduler.split(":")[2]) for tick in ticks)
    assert by_pid[pids["ahead"]] > 0, "the supervisor two hours ahead never fired a tick"
    assert set(by_pid) <= set(pids.values())
    late = [(tick.enqueued_at - tick.tick_at).total_seconds() for tick in ticks]
    figures.update(
        ticks=len(ticks), seconds=span + 1,
        by_supervisor={name: by_pid[pid] for name, pid in pids.items()},
        late_max=round(max(late), 3), late_median=round(sorted(late)[len(late) // 2], 3),
    )  # fmt: skip
    print(figures)


# One run, the two minutes the acceptance asks for: a shorter copy of it would only add CI time.
@pytest.mark.slow
@pytest.mark.mysql
def test_three_supervisors_for_two_minutes_one_killed_one_two_hours_ahead(
    test_database_url, tmp_path
):
    outcome = run(test_database_url, tmp_path, 120)
    check(outcome, 120, {})
