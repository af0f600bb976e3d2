"""Check docs/howto/flow-control.md: each account's events ran one at a time, in order."""

from checks.common import burst

from django_skipqueue.models import Job

burst("--threads", "4")
for account_id in (7, 8):
    jobs = Job.objects.filter(flow_key=f"shop.exports.apply_event:account:{account_id}")
    runs = list(jobs.order_by("last_attempted_at").values_list("return_value", "finished_at"))
    assert [number for number, _ in runs] == [1, 2, 3, 4, 5], runs
    starts = list(jobs.order_by("pk").values_list("last_attempted_at", flat=True))
    ends = list(jobs.order_by("pk").values_list("finished_at", flat=True))
    overlapped = [
        n for n, (end, start) in enumerate(zip(ends[:-1], starts[1:], strict=True)) if end > start
    ]
    assert not overlapped, f"events overlapped: {overlapped}"
