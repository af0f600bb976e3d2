"""The OpenTelemetry SDK with an in-memory exporter, installed once per test process.

OpenTelemetry refuses a second global tracer provider, so every test module that reads spans
shares this one exporter (and clears it before each test).
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
_installed: list[TracerProvider] = []


def install() -> TracerProvider:
    """Set the SDK as the global provider, the first time only."""
    if not _installed:
        sdk = TracerProvider()
        sdk.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(sdk)
        _installed.append(sdk)
    return _installed[0]


def finished(name_start: str) -> list[ReadableSpan]:
    """The finished spans whose name starts with ``name_start``, in the order they ended."""
    return [s for s in EXPORTER.get_finished_spans() if s.name.startswith(name_start)]
