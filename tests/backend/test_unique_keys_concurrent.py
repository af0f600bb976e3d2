"""Eight processes enqueue the same derived key at the same instant: one job, one id for all."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from django_skipqueue.models import Job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skip_locked]

SCRIPT = """
import sys, time
import django
django.setup()
from django.db import transaction
from tests.support.tasks import sync_account
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
with transaction.atomic():
    result = sync_account.enqueue(42, full=bool(int(sys.argv[2]) % 2))
    time.sleep(0.2)  # hold the insert open while the others arrive
print(result.id)
"""

PROCESSES = 8


def test_eight_processes_with_the_same_derived_key_create_one_job(child_env):
    start = time.time() + 4.0  # imports on a loaded machine take a while
    children = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(start), str(n)],
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    answers = [child.communicate(timeout=120) for child in children]
    for child, (_, err) in zip(children, answers, strict=True):
        assert child.returncode == 0, err[-2000:]
    ids = {out.strip() for out, _ in answers}
    assert len(ids) == 1, ids
    job = Job.objects.get()
    assert str(job.pk) in ids
    assert job.idempotency_key == "tests.support.tasks.sync_account:account-42"
