"""skipqueue_purge as people run it: progress on a terminal, a clean stop on SIGINT."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import time

import pytest

from django_skipqueue.models import Job, JobArchive
from tests.support.bulkfill import insert_jobs

pytestmark = pytest.mark.django_db(transaction=True)
DAY = 86_400


def read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def test_progress_is_redrawn_on_a_terminal(manage_py, child_env):
    insert_jobs(3000, status="succeeded", finished_seconds_ago=8 * DAY)
    primary, secondary = pty.openpty()
    command = [
        *manage_py,
        "skipqueue_purge",
        "--older-than",
        "7d",
        "--chunk",
        "500",
        "--sleep",
        "0",
    ]
    child = subprocess.Popen(command, env=child_env, stdout=secondary, stderr=secondary)
    os.close(secondary)
    try:
        output = read_all(primary)
        assert child.wait(60) == 0, output
    finally:
        os.close(primary)
    redraws = output.split("\r\x1b[K")
    assert len(redraws) >= 7, output
    # The rows left are an estimate (the optimizer's), refined by what is done.
    assert re.match(r"purged 500 rows, ~[\d,]+ left, [\d,]+ rows/s, chunk [\d,]+", redraws[1])
    assert "deleted 3,000 rows in 6 chunks" in output
    assert Job.objects.count() == 0


def test_sigint_stops_after_a_complete_chunk_and_exits_130(manage_py, child_env):
    insert_jobs(3000, status="failed", finished_seconds_ago=40 * DAY)
    command = [
        *manage_py, "skipqueue_purge", "--older-than", "7d", "--chunk", "200", "--sleep", "0.5",
        "--archive",
    ]  # fmt: skip
    child = subprocess.Popen(
        command, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while Job.objects.count() == 3000:
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, out + err
    assert "interrupted: run it again to go on" in out
    assert "Interrupted after the last complete chunk." in err
    left = Job.objects.count()
    assert 0 < 3000 - left < 3000 and (3000 - left) % 200 == 0, left
    assert JobArchive.objects.count() == 3000 - left, "archived exactly what was deleted"
    assert f"deleted {3000 - left:,} rows" in out
