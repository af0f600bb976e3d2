"""Check docs/howto/schedule-tasks.md: settings schedules, and ticks after a downtime.

The page's settings schedules are in the table with their next tick in their own zone. Then a
schedule created as the admin would, put twenty minutes behind as after a downtime, fires its
missed ticks by its policy, exactly once however many schedulers run.
"""

from datetime import timedelta
from zoneinfo import ZoneInfo

from checks.common import burst
from django.core.management import call_command

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import Job
from django_skipqueue.scheduling.models import Schedule, Tick

nightly = Schedule.objects.get(name="nightly-report")
local = nightly.next_tick_at.astimezone(ZoneInfo("Europe/Paris"))
assert (local.hour, local.minute, nightly.source) == (3, 0, "settings"), local
rates = Schedule.objects.get(name="exchange-rates")
assert rates.next_tick_at.minute % 15 == 0 and rates.next_tick_at.second == 0

every_minute = Schedule.objects.create(
    name="every-minute", task_path="reports.tasks.refresh_exchange_rates",
    interval_seconds=60, missed="catch_up", catch_up=5,
)  # fmt: skip
now = read_db_now("default")
Schedule.objects.filter(pk=every_minute.pk).update(
    next_tick_at=now.replace(second=0, microsecond=0) - timedelta(minutes=19)
)
for _ in range(3):  # three schedulers, one after the other: the ticks are fired once
    call_command("skipqueue_scheduler", "--once")
ticks = Tick.objects.filter(schedule=every_minute)
assert ticks.count() == 5, ticks.count()  # the 5 most recent of 20 missed
every_minute.refresh_from_db()
assert every_minute.missed_ticks == 15, every_minute.missed_ticks
job_ids = list(ticks.values_list("job_id", flat=True))
burst()
jobs = Job.objects.filter(pk__in=job_ids, status="succeeded")
assert jobs.count() == 5, jobs.count()
every_minute.delete()  # the page goes on with its own two schedules
