"""Batches in the admin: read only, with each batch's progress and callbacks."""

from __future__ import annotations

import pytest

from django_skipqueue.workflows import batch
from tests.workflows.tasks import callback, part

pytestmark = pytest.mark.django_db


def test_the_list_shows_progress_and_the_detail_the_callbacks(admin_client):
    with batch(on_finish=callback, description="thumbnails of album 7") as opened:
        part.enqueue(1)
        part.enqueue(2)
    listing = admin_client.get("/admin/skipqueue_workflows/batch/").content.decode()
    assert "thumbnails of album 7" in listing and "0 / 2 (running)" in listing
    assert "/admin/skipqueue_workflows/batch/add/" not in listing
    # Nothing is deleted by hand: the counters belong to the transactions that record outcomes.
    assert 'value="delete_selected"' not in listing
    delete = f"/admin/skipqueue_workflows/batch/{opened.id}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    detail = admin_client.get(f"/admin/skipqueue_workflows/batch/{opened.id}/change/")
    text = detail.content.decode()
    assert "on_finish: tests.workflows.tasks.callback -&gt; job (not yet)" in text
