"""OpenTelemetry: a span per enqueue and per attempt, one trace from the request to the job.

With ``SKIPQUEUE_TRACING = True`` and the OpenTelemetry API installed (the ``otel`` extra), an
enqueue opens a PRODUCER span and stores its context with the job (``Job.trace_context``, the
W3C ``traceparent``/``tracestate`` pair); the attempt that runs the job opens a CONSUMER span
whose parent is that context, so the request that enqueued, the enqueue and every attempt share
one trace id. An attempt's span carries queue, task, job id, attempt and outcome, and records
the exception of a failed attempt. ``outbox.publish()`` inside a traced request or job adds the
context to the message's headers; the relay's span per message (``outbox/tracing.py``) is its
child, and its own context goes out in the broker's headers.

Which SDK and exporter to use is the project's choice: this module only uses the API (without
an SDK configured, spans are no-ops). Off, the worker never calls into this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django_skipqueue.conf import get_settings

TRACER_NAME = "django_skipqueue"


def enabled() -> bool:
    """Tell whether spans are wanted (the setting) and possible (the API is installed)."""
    if not get_settings().TRACING:
        return False
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


def tracer() -> Any:
    from opentelemetry import trace

    return trace.get_tracer(TRACER_NAME)


def current_context() -> dict[str, str]:
    """The current trace context as W3C headers (empty outside a span)."""
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def start_enqueue(task_path: str, queue_name: str, jobs: list[Any]) -> Any:
    """Open a PRODUCER span for an enqueue and store its context with each of ``jobs``."""
    from opentelemetry import propagate, trace
    from opentelemetry.trace import SpanKind

    span = tracer().start_span(
        f"skipqueue enqueue {task_path}",
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": "django_skipqueue",
            "messaging.destination.name": queue_name,
            "skipqueue.task": task_path,
            "skipqueue.jobs": len(jobs),
        },
    )
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    for job in jobs:
        job.trace_context = carrier
    return span


def end_enqueue(span: Any, jobs: list[Any], error: BaseException | None = None) -> None:
    """Close the enqueue's span: the job id (one job), or the error that stopped it."""
    from opentelemetry.trace import Status, StatusCode

    if len(jobs) == 1 and jobs[0].pk is not None:
        span.set_attribute("skipqueue.job_id", jobs[0].pk)
    if error is not None:
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, str(error)))
    span.end()


@contextmanager
def attempt_span(job: Any) -> Iterator[Any]:
    """A CONSUMER span around one attempt, its parent the context stored at enqueue."""
    from opentelemetry import context, propagate
    from opentelemetry.trace import SpanKind

    parent = propagate.extract(job.trace_context or {})
    token = context.attach(parent)
    try:
        with tracer().start_as_current_span(
            f"skipqueue run {job.task_path}",
            kind=SpanKind.CONSUMER,
            record_exception=False,
            set_status_on_exception=False,
            attributes={
                "messaging.system": "django_skipqueue",
                "messaging.destination.name": job.queue_name,
                "skipqueue.task": job.task_path,
                "skipqueue.job_id": job.pk,
                "skipqueue.attempt": job.attempts,
            },
        ) as span:
            yield span
    finally:
        context.detach(token)


def attempt_ended(span: Any, outcome: str, exception: BaseException | None) -> None:
    """Set the outcome; record the exception of an attempt that failed, as an error."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("skipqueue.outcome", outcome)
    if exception is not None:
        span.record_exception(exception)
        span.set_status(Status(StatusCode.ERROR, f"{type(exception).__name__}: {exception}"))


def with_context(headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` plus the current trace context (the caller's own headers win)."""
    return {**current_context(), **(headers or {})}
