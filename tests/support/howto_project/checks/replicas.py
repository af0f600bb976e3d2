"""Check docs/howto/replicas.md: the page's router keeps the queue's reads on the primary.

The page's ``DATABASES`` name hosts that do not exist here: the test substitutes the project's
own database for each (tests/docs/test_docs.py, ``STAND_INS``), so ``replica1`` and ``replica2``
are other connections to the same database. Rows written inside an open transaction on
``default`` are visible on that connection only: a read that finds the uncommitted job went to
the primary, one that misses the uncommitted user (a model of the project's) went to a
replica alias.
"""

import subprocess
import sys

from checks.chores import record
from django.contrib.auth.models import User
from django.db import connection, router, transaction

from django_skipqueue.conf import get_settings
from django_skipqueue.models import Job

assert router.db_for_read(Job) == "default", router.db_for_read(Job)
assert router.db_for_read(User) in ("replica1", "replica2"), router.db_for_read(User)

with transaction.atomic(using="default"):
    result = record.enqueue("fresh")
    user = User.objects.create(username="ada")
    assert Job.objects.filter(pk=result.id).exists(), "a read of the jobs table left the primary"
    assert record.get_result(result.id).args == ["fresh"], "get_result() read a replica"
    result.refresh()
    assert not User.objects.filter(pk=user.pk).exists(), "other reads stay on default"

replicas = list(get_settings().PURGE_REPLICAS)
assert replicas == ["replica1", "replica2"], replicas
if connection.vendor == "mysql":
    # The stand-ins are the primary itself: the purge refuses them rather than not waiting.
    command = [sys.executable, "manage.py", "skipqueue_purge", "--max-replica-lag", "5"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "is not a replica" in output, output
