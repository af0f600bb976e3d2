"""Check docs/howto/batches.md's chain: three steps, each with its predecessor's value."""

from checks.common import burst

from django_skipqueue.models import Job
from django_skipqueue.workflows.models import Batch

pipeline = Batch.objects.get(description="a.png")
assert Job.objects.filter(batch_id=pipeline.pk).count() == 1, "only the first step waits"
burst()
steps = list(Job.objects.filter(batch_id=pipeline.pk).order_by("pk"))
assert [s.task_path.rsplit(".", 1)[1] for s in steps] == ["download", "resize", "publish"]
assert [s.args for s in steps] == [["https://example.com/a.png"], [25, 2], [50]], steps
assert steps[-1].return_value == "published 50 bytes to news", steps[-1].return_value
pipeline.refresh_from_db()
assert (pipeline.succeeded, pipeline.steps, pipeline.finished_at is not None) == (3, [], True)
