"""OpenTelemetry with the SDK's in-memory exporter: one trace from a request to the job's run.

The request is a view that enqueues, called inside a SERVER span as an instrumented Django
would open one; the job runs in a real worker (a burst Worker of this process, its job on one
of its threads), reading the context the enqueue stored with the row.
"""

from __future__ import annotations

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from django_skipqueue.conf import get_settings
from django_skipqueue.models import Job
from django_skipqueue.outbox import partitions, publish
from django_skipqueue.outbox.models import OutboxMessage
from django_skipqueue.outbox.relay import outgoing
from django_skipqueue.worker import claimer
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from tests.support import worker_tasks as wt
from tests.support.otel import finished
from tests.support.tasks import noop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("tracing_on")]


def run_worker(monkeypatch) -> None:
    monkeypatch.setattr(claimer, "BURST_HORIZON", 0.0)
    options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False)
    Worker(options, owner=owner_id()).run()


def enqueue_view(request):
    result = noop.enqueue()
    return HttpResponse(result.id)


def test_the_request_that_enqueues_and_the_jobs_run_share_one_trace(
    monkeypatch, close_thread_connections
):
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("GET /enqueue", kind=SpanKind.SERVER) as request_span:
        job_id = int(enqueue_view(RequestFactory().get("/enqueue")).content)
    assert Job.objects.get(pk=job_id).trace_context["traceparent"]
    run_worker(monkeypatch)
    [enqueue] = finished("skipqueue enqueue")
    [attempt] = finished("skipqueue run")
    trace_id = request_span.get_span_context().trace_id
    assert enqueue.context.trace_id == attempt.context.trace_id == trace_id
    assert enqueue.parent.span_id == request_span.get_span_context().span_id
    assert attempt.parent.span_id == enqueue.context.span_id
    assert attempt.kind == SpanKind.CONSUMER and enqueue.kind == SpanKind.PRODUCER
    assert attempt.attributes["skipqueue.job_id"] == job_id
    assert attempt.attributes["skipqueue.attempt"] == 1
    assert attempt.attributes["skipqueue.outcome"] == "succeeded"
    assert attempt.attributes["messaging.destination.name"] == "default"
    assert attempt.status.status_code != StatusCode.ERROR


def test_a_failing_attempt_records_its_exception(monkeypatch, close_thread_connections):
    job_id = wt.always_fail.enqueue().id
    run_worker(monkeypatch)
    attempts = finished("skipqueue run")
    assert attempts and all(a.attributes["skipqueue.job_id"] == int(job_id) for a in attempts)
    failed = attempts[-1]
    assert failed.status.status_code == StatusCode.ERROR
    [event] = [e for e in failed.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("ValueError")
    assert failed.attributes["skipqueue.outcome"] in ("failed", "retry")


def test_bulk_enqueue_and_outbox_messages_carry_the_context():
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("GET /bulk") as request_span:
        noop.get_backend().enqueue_many([(noop, [], {})] * 3)
        publish("orders", {"n": 1}, key="k", headers={"x-mine": "1"})
    trace_id = f"{request_span.get_span_context().trace_id:032x}"
    contexts = [job.trace_context for job in Job.objects.all()]
    assert len(contexts) == 3 and all(trace_id in c["traceparent"] for c in contexts)
    message = OutboxMessage.objects.get()
    assert trace_id in message.headers["traceparent"] and message.headers["x-mine"] == "1"
    # What the relay hands the broker: the message's headers go out with it.
    [read] = partitions.sendable("default", message.partition, 10).messages
    wire = outgoing(read, get_settings().OUTBOX_TOPICS)
    assert wire.headers["traceparent"] == message.headers["traceparent"]


def test_tracing_off_stores_nothing(settings):
    settings.SKIPQUEUE_TRACING = False
    with trace.get_tracer("test").start_as_current_span("GET /off"):
        job_id = noop.enqueue().id
    assert Job.objects.get(pk=job_id).trace_context is None
    assert not finished("skipqueue")
