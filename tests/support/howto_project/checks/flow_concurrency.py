"""Check docs/howto/flow-control.md: no customer ran more than two exports at once."""

from django_skipqueue.models import FlowKey, Job

jobs = Job.objects.filter(task_path="shop.exports.export_orders")
assert set(jobs.values_list("status", flat=True)) == {"succeeded"}, "the burst left jobs behind"
for customer_id in (1, 2):
    key = f"shop.exports.export_orders:customer:{customer_id}"
    runs = jobs.filter(flow_key=key).values_list("last_attempted_at", "finished_at")
    events = sorted([(start, 1) for start, _ in runs] + [(end, -1) for _, end in runs])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak <= 2, f"customer {customer_id} ran {peak} exports at once"
    assert FlowKey.objects.get(key=key).running == 0, "a slot was not given back"
