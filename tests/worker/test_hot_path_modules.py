"""How many of the package's modules one job's first, successful attempt passes through.

Counted with ``sys.settrace`` (and ``threading.settrace`` for the job's thread) over one burst
run of a worker in this process that claims, runs and records one job: every frame whose
module belongs to ``django_skipqueue`` names a module it passed through. Everything is imported
before the trace starts, so module bodies run at import time do not count. A newcomer reads
these modules to follow a job; docs/discussions/architecture.md lists them.

Counted the same way, the flat layout this replaced passed through 23, the first layout by
role 21; merging modules that held one idea in two files brought it to 15, the goal of
issue 13; reading the server's packet limit at start (``db.packets``, the bound on results)
made it 16. A measure since issue 36, not a bound: docs/discussions/architecture.md lists the
modules, and the test fails when that list is stale (a change that moves it says so there).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from django_skipqueue.models import Job
from django_skipqueue.worker import claimer
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from tests.support.measures import PAGE, hot_path_on_page
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def package_modules() -> Iterator[set[str]]:
    """Collect the ``django_skipqueue`` modules whose code runs in the block, on any thread."""
    seen: set[str] = set()

    def trace(frame: FrameType, event: str, arg: Any) -> None:
        name = frame.f_globals.get("__name__", "")
        if name == "django_skipqueue" or name.startswith("django_skipqueue."):
            seen.add(name)

    previous = sys.gettrace()
    threading.settrace(trace)  # type: ignore[arg-type]
    sys.settrace(trace)  # type: ignore[arg-type]
    try:
        yield seen
    finally:
        sys.settrace(previous)
        threading.settrace(None)  # type: ignore[arg-type]


def burst(monkeypatch) -> Worker:
    monkeypatch.setattr(claimer, "BURST_HORIZON", 0.0)  # nothing is scheduled here
    options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False)
    return Worker(options, owner=owner_id())


def test_a_first_attempt_success_passes_through_the_modules_the_architecture_page_lists(
    monkeypatch, close_thread_connections, capsys
):
    result = noop.enqueue()
    worker = burst(monkeypatch)
    with package_modules() as modules:
        worker.run()
    assert Job.objects.get(pk=result.id).status == "succeeded"
    with capsys.disabled():
        print(f"\n{len(modules)} modules: {', '.join(sorted(modules))}")
    listed = hot_path_on_page(PAGE.read_text())
    traced = sorted(name.removeprefix("django_skipqueue.") for name in modules)
    assert traced == listed, (
        "update the hot-path marker of docs/discussions/architecture.md (and its text) to: "
        + " ".join(traced)
    )
