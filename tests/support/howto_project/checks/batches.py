"""Check docs/howto/batches.md: the page's batch ran its callback once, after its ten jobs.

Then a batch extended while open, and one with a job that fails for good: ``on_failure`` runs
once, with that job's error.
"""

import importlib
from pathlib import Path

from checks.common import burst

from django_skipqueue.exceptions import BatchFinished
from django_skipqueue.models import Job
from django_skipqueue.workflows import batch, extend
from django_skipqueue.workflows.models import Batch

album = Batch.objects.get(description="album 7")
assert (album.size, album.succeeded, album.failed) == (10, 10, 0) and album.finished_at
callback = Job.objects.get(task_path="reports.albums.album_done")
assert callback.pk == album.success_job_id and callback.args == [album.pk], callback.args
assert callback.return_value == "ada: 10 of 10 thumbnails made", callback.return_value
text = Path("emails", f"album-{album.pk}.txt").read_text()
assert "thumbs/10.jpg" in text and album.pk == 1, (album.pk, text)

from reports.albums import album_done, make_thumbnail  # noqa: E402

with batch(on_finish=album_done, callback_kwargs={"owner": "bob"}) as grown:
    make_thumbnail.enqueue(1)
with extend(grown.id):
    make_thumbnail.enqueue(2)
burst()
grown_row = Batch.objects.get(pk=grown.id)
assert (grown_row.size, grown_row.succeeded) == (2, 2)
try:
    with extend(grown.id):
        make_thumbnail.enqueue(3)
    raise AssertionError("a finished batch took a job")
except BatchFinished:
    pass


# A task that fails for good, added to the page's module (the workers import it by path).
Path("reports/albums.py").write_text(
    Path("reports/albums.py").read_text()
    + "\n\n@task\ndef broken(photo_id: int) -> None:\n"
    + "    raise ValueError(f'photo {photo_id} is unreadable')\n"
)
import reports.albums  # noqa: E402

importlib.reload(reports.albums)
with batch(on_failure=album_done, on_success=album_done,
           callback_kwargs={"owner": "eve"}) as mixed:  # fmt: skip
    make_thumbnail.enqueue(4)
    reports.albums.broken.enqueue(5)
burst()
mixed_row = Batch.objects.get(pk=mixed.id)
assert (mixed_row.succeeded, mixed_row.failed) == (1, 1)
assert mixed_row.failure_job_id and mixed_row.success_job_id is None
text = Path("emails", f"album-{mixed.id}.txt").read_text()
assert "photo 5 is unreadable" in text, text
