"""What skipqueue_status shows of schedules: next and last tick, and the last job's outcome."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.apps import apps

from django_skipqueue.durations import format_seconds
from django_skipqueue.scheduling.timing import zone

APP = "django_skipqueue.scheduling"
#: Schedules listed at most; a line says how many more there are.
SHOWN = 50
#: Overdue schedules named at most by skipqueue_health.
OVERDUE_NAMED = 5


@dataclass
class ScheduleLine:
    name: str
    timing: str
    time_zone: str
    next_tick_at: str | None
    last_tick_at: str | None
    last_job_id: int | None
    last_job_status: str | None
    missed_ticks: int
    last_error: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        job = (
            f"job {self.last_job_id} {self.last_job_status}" if self.last_job_id else "no job yet"
        )
        error = f"; error: {self.last_error[:80]}" if self.last_error else ""
        return (
            f"  {self.name}: {self.timing} ({self.time_zone}); next {self.next_tick_at or '-'}; "
            f"last {self.last_tick_at or '-'}, {job}; missed {self.missed_ticks}{error}"
        )


def schedule_status(using: str) -> list[ScheduleLine] | None:
    """The enabled schedules by name, or None when the app is not installed."""
    if not apps.is_installed(APP):
        return None
    from django_skipqueue.models import Job
    from django_skipqueue.scheduling.models import Schedule

    rows = list(Schedule.objects.using(using).enabled().order_by("name")[:SHOWN])
    job_ids = [row.last_job_id for row in rows if row.last_job_id]
    statuses = dict(Job.objects.using(using).filter(pk__in=job_ids).values_list("pk", "status"))
    return [_line(row, statuses) for row in rows]


def overdue_problem(using: str, limit: float) -> str | None:
    """Why the schedules are unhealthy (an enabled one is over ``limit`` seconds late), or None.

    Reads the scheduler's own index (enabled, next_tick_at): the oldest due ticks first.
    """
    if not apps.is_installed(APP):
        return None
    from django_skipqueue.db.clock import DatabaseNowPlus, read_db_now
    from django_skipqueue.scheduling.models import Schedule

    late = list(Schedule.objects.using(using).due(DatabaseNowPlus(-limit))[:OVERDUE_NAMED])
    if not late:
        return None
    now = read_db_now(using)
    names = ", ".join(f"{row.name} ({format_seconds(_late(row, now))} late)" for row in late)
    return f"schedules overdue (limit {format_seconds(limit)}): {names}"


def _late(row: Any, now: datetime) -> float:
    return (now - row.next_tick_at).total_seconds() if row.next_tick_at else 0.0


def render(lines: list[ScheduleLine]) -> str:
    if not lines:
        return "schedules: none enabled"
    more = " (the first 50)" if len(lines) == SHOWN else ""
    return "\n".join([f"schedules{more}:", *(line.line() for line in lines)])


def _line(row: Any, statuses: dict[int, str]) -> ScheduleLine:
    status = statuses.get(row.last_job_id, "purged") if row.last_job_id else None
    return ScheduleLine(
        name=row.name,
        timing=row.timing,
        time_zone=row.time_zone,
        next_tick_at=local_time(row.next_tick_at, row.time_zone),
        last_tick_at=local_time(row.last_tick_at, row.time_zone),
        last_job_id=row.last_job_id,
        last_job_status=status,
        missed_ticks=row.missed_ticks,
        last_error=row.last_error,
    )


def local_time(moment: datetime | None, time_zone: str) -> str | None:
    """A tick time in the schedule's zone, as people read the schedule."""
    if moment is None:
        return None
    try:
        return moment.astimezone(zone(time_zone)).strftime("%Y-%m-%d %H:%M:%S %Z")
    except ValueError:
        return moment.isoformat()
