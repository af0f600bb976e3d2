"""Batches in the admin: read only, with each batch's progress and callbacks."""

from __future__ import annotations

from html import unescape

import pytest
from django.utils.html import strip_tags

from django_skipqueue.workflows import batch
from tests.workflows.tasks import callback, part

pytestmark = [pytest.mark.django_db, pytest.mark.vendor_neutral]


def test_the_list_shows_progress_and_the_detail_the_callbacks(admin_client):
    with batch(on_finish=callback, description="thumbnails of album 7") as opened:
        part.enqueue(1)
        part.enqueue(2)
    listing = admin_client.get("/admin/skipqueue_workflows/batch/").content.decode()
    shown = text_of(listing)
    assert "thumbnails of album 7" in shown and "0 / 2 (running)" in shown
    assert "/admin/skipqueue_workflows/batch/add/" not in listing
    # Nothing is deleted by hand: the counters belong to the transactions that record outcomes.
    assert 'value="delete_selected"' not in listing
    delete = f"/admin/skipqueue_workflows/batch/{opened.id}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    detail = admin_client.get(f"/admin/skipqueue_workflows/batch/{opened.id}/change/")
    assert "on_finish: tests.workflows.tasks.callback -> not yet" in text_of(detail.content)


def text_of(page: bytes | str) -> str:
    """The words of a page as a reader sees them (no tags, no entities)."""
    return unescape(strip_tags(page if isinstance(page, str) else page.decode()))
