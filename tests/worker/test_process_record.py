"""Workers, supervisors and relays: one process record, one reading of the heartbeat.

Both tables are read the same way: stopped, live, stale or gone, and which processes answer a
wake-up datagram. A process row of each table is put at each age (on the database's clock);
both must be classified alike.
"""

from __future__ import annotations

import ast

import pytest
from django.utils import timezone

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.models import WorkerProcess
from django_skipqueue.models.process import GONE_FACTOR, ProcessRecord
from django_skipqueue.outbox.models import OutboxRelay
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db

STALE = 60.0
#: Seconds since the last heartbeat, by the state each age means (stopped: any age).
AGES = {"live": 1.0, "stale": STALE * 2, "gone": STALE * GONE_FACTOR * 2}


def worker(name: str, silent: float, **fields: object) -> WorkerProcess:
    now = timezone.now()
    row = WorkerProcess.objects.create(
        owner=name, role="worker", hostname="h", pid=1, started_at=now, last_heartbeat_at=now,
        wakeup_address="127.0.0.1:9", **fields,
    )  # fmt: skip
    WorkerProcess.objects.filter(pk=row.pk).update(last_heartbeat_at=DatabaseNowPlus(-silent))
    return row


def relay(name: str, silent: float, **fields: object) -> OutboxRelay:
    row = OutboxRelay.objects.create(
        name=name, hostname="h", pid=1, broker="amqp://x", wakeup_address="127.0.0.1:9", **fields
    )
    OutboxRelay.objects.filter(pk=row.pk).update(last_heartbeat_at=DatabaseNowPlus(-silent))
    return row


@pytest.fixture
def processes(settings):
    settings.SKIPQUEUE_WORKER_STALE_SECONDS = STALE
    settings.SKIPQUEUE_HEARTBEAT_SECONDS = 5.0
    for make in (worker, relay):
        for state, silent in AGES.items():
            make(state, silent)
        make("stopped", 1.0, stopped_at=timezone.now())


@pytest.mark.parametrize("model", [WorkerProcess, OutboxRelay])
def test_both_tables_read_the_heartbeat_alike(processes, model):
    assert issubclass(model, ProcessRecord)
    label = "owner" if model is WorkerProcess else "name"
    rows = model.objects.all()
    states = dict(rows.with_state().values_list(label, "state"))
    assert states == {"live": "live", "stale": "stale", "gone": "gone", "stopped": "stopped"}
    assert set(rows.live().values_list(label, flat=True)) == {"live"}
    assert set(rows.stale().values_list(label, flat=True)) == {"stale"}
    assert set(rows.running().values_list(label, flat=True)) == {"live", "stale", "gone"}


@pytest.mark.parametrize("model", [WorkerProcess, OutboxRelay])
def test_only_a_process_that_beat_within_three_heartbeats_answers_a_wakeup(processes, model):
    label = "owner" if model is WorkerProcess else "name"
    assert set(model.objects.answering().values_list(label, flat=True)) == {"live"}
    # Live (within the stale horizon) but silent for more than three heartbeats: no datagram.
    model.objects.filter(**{label: "live"}).update(last_heartbeat_at=DatabaseNowPlus(-20))
    assert not model.objects.answering().exists()
    assert model.objects.live().count() == 1


def absolute(path_parts: tuple[str, ...], node: ast.ImportFrom) -> str:
    """The module an ``import from`` names, relative imports resolved."""
    if node.level == 0:
        return node.module or ""
    package = list(path_parts[:-1])[: len(path_parts) - node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


def test_the_outbox_imports_no_private_name_of_the_core():
    private = []
    for path in sorted((ROOT / "django_skipqueue" / "outbox").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = absolute(parts, node)
            names = [alias.name for alias in node.names if alias.name.startswith("_")]
            if names and not module.startswith("django_skipqueue.outbox"):
                private.append(f"{path.name}: {module} {names}")
    assert not private
