"""A claimer process for the exclusivity test: ``python -m tests.reliability.claimer OWNER``.

Waits for the file ``--go`` to exist (so that every claimer starts at once), then claims
batches of ``--limit`` jobs until the queue is empty, writing one ledger row per job claimed
(after the claim committed, in one INSERT per batch). Prints the number of jobs it claimed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import django


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="claimer")
    parser.add_argument("owner")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--go", required=True)
    args = parser.parse_args(argv)
    django.setup()
    from django_skipqueue.models import Job
    from testproject.demo.models import LedgerEntry

    Job.objects.exists()  # connect before the start line
    while not Path(args.go).exists():
        time.sleep(0.01)
    claimed = 0
    while batch := Job.objects.claim(["default"], limit=args.limit, owner=args.owner):
        rows = [
            LedgerEntry(job_id=job.pk, attempt=job.attempts, worker=args.owner) for job in batch
        ]
        LedgerEntry.objects.bulk_create(rows)
        claimed += len(batch)
    print(claimed)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.reliability.settings")
    sys.exit(main(sys.argv[1:]))
