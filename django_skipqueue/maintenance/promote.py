"""promote() makes due scheduled jobs ready, in small ``SKIP LOCKED`` batches.

Each batch is one short transaction, disjoint from every other, so any number of supervisors
(and ``skipqueue_reap`` loops) can promote at once. Due means ``run_after <= NOW()`` on the
database's clock.
"""

from __future__ import annotations

from django.db import transaction

from django_skipqueue import transitions, wakeup
from django_skipqueue.conf import get_settings
from django_skipqueue.db.statements import retry_whole_transaction
from django_skipqueue.models import Job


def promote(using: str = "default", *, batch: int | None = None) -> int:
    """Make due scheduled jobs ready, in small SKIP LOCKED batches; return how many."""
    batch = batch or get_settings().MAINTENANCE_BATCH
    total = 0
    while True:
        promoted = retry_whole_transaction(using, lambda: _promote_batch(using, batch))
        total += promoted
        if promoted < batch:
            return total


def _promote_batch(using: str, batch: int) -> int:
    # (status, run_after, id) is the skipqueue_due index: the scan stops at the LIMIT.
    due = Job.objects.using(using).due().order_by("run_after", "id")
    with transaction.atomic(using=using):
        fields = ["pk", "queue_name", "flow_key", "flow_slot"]
        rows = Job.objects.db_manager(using).lock_batch(due, fields, batch)
        if rows:
            ids = [pk for pk, *_ in rows]
            # Jobs of a flow key wait blocked for their key's admission (19): a slot holder
            # (a retry after a backoff) keeps its slot and waits for the rate window alone.
            keys = {key for _, _, key, _ in rows if key is not None}
            holders: dict[str, list[int]] = {}
            for pk, _, key, slot in rows:
                if key is not None and slot:
                    holders.setdefault(key, []).append(pk)
            transitions.promote(Job.objects.using(using).filter(pk__in=ids), keys, holders)
            wakeup.after_commit(using, {queue_name for _, queue_name, *_ in rows})
    return len(rows)
