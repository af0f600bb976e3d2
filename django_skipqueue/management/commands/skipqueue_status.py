"""manage.py skipqueue_status: depth, age, throughput, latency and workers, per queue."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from django_skipqueue.durations import format_seconds
from django_skipqueue.extensions import StatusSection, extensions
from django_skipqueue.flow.status import KeyLine, flow_status
from django_skipqueue.management.arguments import add_backend, backend_named, int_between
from django_skipqueue.management.database import explained
from django_skipqueue.monitoring.dbhealth import database_health
from django_skipqueue.monitoring.stats import (
    DEPTH_STATUSES,
    QueueStatus,
    StatusReport,
    queue_status,
)

COLUMNS = (
    "queue",
    "paused",
    *DEPTH_STATUSES,
    "oldest ready",
    "done/min",
    "claim p50/p95",
    "reclaimed 1h",
    "workers",
)


class Command(BaseCommand):
    help = (
        "Show each queue: jobs ready, scheduled, claimed and failed; how long the oldest ready "
        "job has waited; throughput and claim latency over the last minutes; reclaims in the "
        "last hour; live and stale workers; the database server's InnoDB history list length "
        "and oldest open transaction."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
        parser.add_argument(
            "--minutes",
            type=int_between(1, 60, "minutes"),
            default=5,
            help="Window of throughput and latency, 1-60 minutes (default: %(default)r).",
        )
        add_backend(parser, "Task backend to show")

    def execute(self, *args: Any, **options: Any) -> Any:
        """Say in one line that the database cannot be reached (exit status 1), not in a
        traceback: Django's own checks, which run first, would connect and raise."""
        with explained(backend_named(options["backend"]).database):
            return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        backend = backend_named(options["backend"])
        window = options["minutes"]
        report = queue_status(backend.database, backend.queue_names, window_minutes=window)
        sections = app_sections(backend.database)
        flows = flow_status(backend.database)
        server = database_health(backend.database)
        if options["json"]:
            data = report.as_dict()
            data["database"] = server.as_dict()
            data.update((section.key, section.data) for section in sections)
            data["flow_keys"] = [line.as_dict() for line in flows]
            self.stdout.write(json.dumps(data, indent=2))
        else:
            self.stdout.write(render(report))
            self.stdout.write(server.line())
            for section in sections:
                self.stdout.write(section.text)
            if flows:
                self.stdout.write(render_flows(flows))


def app_sections(using: str) -> list[StatusSection]:
    """The sections the installed apps add (``Extension.status_sections``), in app order."""
    return [section for extension in extensions() for section in extension.status_sections(using)]


def render(report: StatusReport) -> str:
    """The report as an aligned text table with a few footer lines."""
    rows = [COLUMNS, *(_row(queue) for queue in report.queues)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    workers = report.workers
    reaper = (
        "never ran"
        if report.reaper_age is None
        else (f"last pass {format_seconds(report.reaper_age)} ago")
    )
    purge = (
        "never ran"
        if not report.purge
        else (
            f"last finished {format_seconds(report.purge['age_seconds'])} ago, "
            f"{report.purge['last_result'].get('deleted', 0):,} rows"
        )
    )
    lines += [
        "",
        f"workers: {workers.live} live, {workers.stale} stale; reaper: {reaper}; purge: {purge}",
        f"throughput and claim latency over the last {report.window_minutes} minute(s); "
        "~ marks an estimate (count past SKIPQUEUE_STATUS_COUNT_CAP)",
    ]
    return "\n".join(line.rstrip() for line in lines)


def _row(queue: QueueStatus) -> tuple[str, ...]:
    counts = tuple(str(queue.counts[status]) for status in DEPTH_STATUSES)
    latency = f"{_ms(queue.claim_p50_ms)}/{_ms(queue.claim_p95_ms)}"
    return (
        queue.name,
        "yes" if queue.paused else "no",
        *counts,
        format_seconds(queue.oldest_ready_age),
        f"{queue.finished_per_minute:g}",
        latency,
        str(queue.reclaimed_last_hour),
        _workers(queue),
    )


FLOW_COLUMNS = (
    "flow key", "limit", "running", "slots held", "waiting", "oldest waiting", "rate",
)  # fmt: skip


def render_flows(lines: list[KeyLine]) -> str:
    """The flow keys with jobs running or waiting, as an aligned table."""
    rows = [FLOW_COLUMNS]
    for line in lines:
        rows.append(
            (
                line.key,
                "-" if line.limit is None else str(line.limit),
                str(line.running),
                str(line.slots_held),
                str(line.waiting),
                format_seconds(line.oldest_waiting_seconds),
                line.rate or "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(FLOW_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return ">5s" if value == float("inf") else f"≤{value:g}ms"


def _workers(queue: QueueStatus) -> str:
    text = f"{queue.live_workers} live"
    return f"{text}, {queue.stale_workers} stale" if queue.stale_workers else text
