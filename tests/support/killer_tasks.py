"""Tasks for the tests of a worker process killed by its own task (worker processes import
them by path)."""

from __future__ import annotations

import os
import signal
import time

from django_skipqueue.tasks import task


@task(max_attempts=1)
def kill_own_process_after(seconds: float) -> None:
    """Wait ``seconds`` (the other jobs of the claim start meanwhile), then SIGKILL this
    worker process."""
    time.sleep(seconds)
    os.kill(os.getpid(), signal.SIGKILL)


@task(max_attempts=1)
def innocent(label: str) -> str:
    return label


@task(max_attempts=2, retry_backoff=0)
def sleeper(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"
