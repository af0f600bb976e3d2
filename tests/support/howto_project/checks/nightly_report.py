"""Check docs/howto/migrate.md: the cron command enqueues once per day, however often it runs."""

from django.core.management import call_command
from django.utils import timezone

from django_skipqueue.models import Job

for _ in range(3):  # a cron entry that fires twice, and a second host
    call_command("enqueue_nightly_report")
day = timezone.localdate().isoformat()
jobs = Job.objects.filter(task_path="reports.tasks.build_nightly_report")
assert [(job.args, job.idempotency_key) for job in jobs] == [([day], f"nightly-report:{day}")]
