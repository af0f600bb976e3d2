"""Batches in the admin: read only, with each batch's progress and callbacks."""

from __future__ import annotations

from html import unescape

import pytest
from django.utils import timezone
from django.utils.html import strip_tags

from django_skipqueue.workflows import batch
from django_skipqueue.workflows.models import Batch
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


def test_a_batch_page_links_its_nested_batches_failed_first(admin_client):
    with batch(description="outer") as outer:
        with batch(description="fine inner"):
            part.enqueue(1)
        with batch(description="broken inner") as broken_inner:
            part.enqueue(2)
    Batch.objects.filter(pk=broken_inner.id).update(failed=1, finished_at=timezone.now())
    page = admin_client.get(f"/admin/skipqueue_workflows/batch/{outer.id}/change/").content
    nested = text_of(page).split("Nested: ", 1)[1]
    assert nested.startswith("broken inner (1/1) (failed), fine inner (0/1) (running)"), nested
    assert f'data-batch="{broken_inner.id}"' in page.decode()
