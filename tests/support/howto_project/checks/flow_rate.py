"""Check docs/howto/flow-control.md: the geocoder never got more than 10 calls a second."""

from collections import Counter

from checks.common import burst

from django_skipqueue.models import Job

burst("--threads", "4")
jobs = Job.objects.filter(task_path="shop.exports.geocode")
assert set(jobs.values_list("status", flat=True)) == {"succeeded"}
# Admission is what the window counts; a job is claimed right after it.
per_second = Counter(int(start.timestamp()) for start in jobs.values_list("started_at", flat=True))
assert max(per_second.values()) <= 10, per_second
assert len(per_second) >= 3, "25 calls at 10 a second take three windows"
