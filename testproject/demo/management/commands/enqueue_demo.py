"""``manage.py enqueue_demo``: fill the queues with a mixed demo workload, or report on it."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count

from django_skipqueue.models import Job
from testproject.demo.models import LedgerEntry
from testproject.demo.tasks import add, build_report, record, send_welcome_email

#: Share of each kind of job in the mix (they add up to 1).
MIX = (("add", 0.4), ("record", 0.3), ("email", 0.2), ("report", 0.1))


class Command(BaseCommand):
    help = "Enqueue a mixed demo workload (--jobs N), or print job counts by status (--report)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--jobs", type=int, default=0, help="Jobs to enqueue (default: 0).")
        parser.add_argument("--seed", type=int, default=None, help="Random seed of the mix.")
        parser.add_argument("--report", action="store_true", help="Print counts by status.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["jobs"] < 0:
            raise CommandError("--jobs must be 0 or more.")
        if options["jobs"]:
            self.enqueue(options["jobs"], random.Random(options["seed"]))
        if options["report"]:
            self.report()

    def enqueue(self, count: int, rng: random.Random) -> None:
        kinds = rng.choices([kind for kind, _ in MIX], [share for _, share in MIX], k=count)
        calls = [self.call(kind, index, rng) for index, kind in enumerate(kinds)]
        for start in range(0, len(calls), 1000):
            add.get_backend().enqueue_many(calls[start : start + 1000])
        mix = ", ".join(f"{kind}={n}" for kind, n in sorted(Counter(kinds).items()))
        self.stdout.write(f"Enqueued {count} demo jobs ({mix}).")

    @staticmethod
    def call(kind: str, index: int, rng: random.Random) -> tuple[Any, list[Any], dict[str, Any]]:
        if kind == "add":
            return add, [rng.randint(0, 99), rng.randint(0, 99)], {}
        if kind == "record":
            return record, [], {"label": f"demo-{index}"}
        if kind == "email":
            return send_welcome_email, [index], {}
        return build_report, [rng.randint(10, 1000)], {}

    def report(self) -> None:
        by_status = dict(Job.objects.values_list("status").annotate(n=Count("id")).order_by())
        self.stdout.write("status      jobs")
        for status in ("ready", "scheduled", "claimed", "succeeded", "failed", "cancelled"):
            self.stdout.write(f"{status:<11} {by_status.get(status, 0):>5}")
        executions = LedgerEntry.objects.count()
        recorded = LedgerEntry.objects.values("job_id").distinct().count()
        self.stdout.write(
            f"ledger: {executions} executions of {recorded} record jobs "
            f"({executions - recorded} repeated)"
        )
