"""Fixtures shared by the monitoring tests."""

from __future__ import annotations

import pytest

from tests.support.otel import EXPORTER, install


@pytest.fixture
def tracing_on(settings) -> None:
    """SKIPQUEUE_TRACING on, spans going to the process's in-memory exporter, emptied first."""
    install()
    settings.SKIPQUEUE_TRACING = True
    EXPORTER.clear()
