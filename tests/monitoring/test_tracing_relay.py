"""OpenTelemetry through the outbox relay, against the real RabbitMQ and NATS JetStream.

A view publishes an outbox message inside a SERVER span (as an instrumented Django opens one);
a relay of this process publishes it to the broker; a consumer reads the message back. The
request, the relay's publish span and the consumed message's ``traceparent`` share one trace
id, and the consumer's parent is the relay's span. A message the broker refuses records the
error on its span.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import transaction
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from django_skipqueue.conf import get_settings
from django_skipqueue.outbox import partitions, publish
from django_skipqueue.outbox.relay import Relay, Round
from django_skipqueue.outbox.tracing import TracedTransport
from django_skipqueue.outbox.transports import Transport
from django_skipqueue.outbox.transports.nats import NatsTransport
from django_skipqueue.outbox.transports.rabbitmq import RabbitMQTransport
from tests.support.brokers import NATS_PORT, NatsStream, RabbitQueue, rabbitmq_vhost
from tests.support.otel import finished

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tracing_on"),
    pytest.mark.vendor_neutral,
]


@pytest.fixture(autouse=True)
def outbox_partitions() -> None:
    partitions.ensure_partitions("default", get_settings().OUTBOX_PARTITIONS)


@pytest.fixture
def rabbitmq() -> Iterator[tuple[RabbitMQTransport, RabbitQueue]]:
    with rabbitmq_vhost() as url:
        queue = RabbitQueue(url, "orders", "orders-seen")
        transport = RabbitMQTransport(url)
        transport.connect()
        yield transport, queue
        transport.close()
        queue.close()


@pytest.fixture
def nats() -> Iterator[tuple[NatsTransport, NatsStream]]:
    """A stream of the test's own; the topic "orders" goes to its subject."""
    stream = NatsStream(f"orders-{secrets.token_hex(4)}")
    transport = NatsTransport(f"nats://127.0.0.1:{NATS_PORT}")
    transport.connect()
    topics = {**settings.SKIPQUEUE_OUTBOX_TOPICS, "orders": stream.subject}
    with override_settings(SKIPQUEUE_OUTBOX_TOPICS=topics):
        yield transport, stream
    transport.close()
    stream.close()


def order_view(request):
    """A view that writes an order's event in its transaction."""
    with transaction.atomic():
        message = publish("orders", {"order_id": 7}, key="order-7", message_id="o-7")
    return HttpResponse(message.pk)


def request_publishing() -> trace.Span:
    """Call the view in a SERVER span; return the request's span."""
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("POST /orders", kind=SpanKind.SERVER) as span:
        order_view(RequestFactory().post("/orders"))
    return span


def run_relay(transport: Transport) -> Round:
    return Relay("default", transport, "relay-a").run_round()


def ids_of(traceparent: str) -> tuple[int, int]:
    """The trace id and the parent span id of a W3C traceparent header."""
    _version, trace_id, span_id, _flags = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


def check_one_trace(request: trace.Span, headers: dict[str, str], broker: str) -> ReadableSpan:
    """The relay's span is the request's child, the consumed headers the relay span's."""
    [span] = finished("skipqueue publish orders")
    trace_id = request.get_span_context().trace_id
    assert span.context.trace_id == trace_id
    assert span.parent is not None and span.parent.span_id == request.get_span_context().span_id
    assert ids_of(headers["traceparent"]) == (trace_id, span.context.span_id)
    assert span.kind == SpanKind.PRODUCER
    assert span.attributes["messaging.system"] == broker
    assert span.attributes["messaging.message.id"] == "o-7"
    assert span.attributes["skipqueue.outbox.topic"] == "orders"
    assert span.attributes["skipqueue.outbox.key"] == "order-7"
    assert span.attributes["skipqueue.outbox.outcome"] == "sent"
    assert span.attributes["skipqueue.outbox.attempt"] == 1
    assert span.status.status_code != StatusCode.ERROR
    # The consumer of the how-to: its span continues the trace under the relay's.
    parent = propagate.extract(headers)
    with trace.get_tracer("consumer").start_as_current_span("handle order", context=parent):
        pass
    [consumer] = finished("handle order")
    assert consumer.context.trace_id == trace_id
    assert consumer.parent is not None and consumer.parent.span_id == span.context.span_id
    return span


@pytest.mark.rabbitmq
def test_request_relay_and_rabbitmq_consumer_share_one_trace(rabbitmq):
    transport, queue = rabbitmq
    request = request_publishing()
    assert run_relay(transport).sent == 1
    [received] = queue.drain()
    span = check_one_trace(request, received.headers, "rabbitmq")
    assert span.attributes["messaging.destination.name"] == "orders"


@pytest.mark.nats
def test_request_relay_and_nats_consumer_share_one_trace(nats):
    transport, stream = nats
    request = request_publishing()
    assert run_relay(transport).sent == 1
    [received] = stream.messages()
    span = check_one_trace(request, received.headers, "nats")
    assert span.attributes["messaging.destination.name"] == stream.subject


@pytest.mark.rabbitmq
def test_a_message_rabbitmq_refuses_records_the_error_on_its_span(rabbitmq):
    transport, queue = rabbitmq
    queue.channel.exchange_declare("audit", exchange_type="topic", durable=True)  # no queue
    with trace.get_tracer("test").start_as_current_span("POST /audit") as request:
        publish("audit", {"n": 1}, key="a", message_id="lost-1")
    assert run_relay(transport).dead == 1
    [span] = finished("skipqueue publish audit")
    assert span.context.trace_id == request.get_span_context().trace_id
    assert span.attributes["skipqueue.outbox.outcome"] == "dead"
    assert span.status.status_code == StatusCode.ERROR
    [event] = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("MessageRejected")
    assert "unroutable" in event.attributes["exception.message"]


@pytest.mark.nats
def test_a_subject_without_a_stream_records_the_error_on_its_span(nats):
    transport, _stream = nats
    publish("audit", {"n": 1}, key="a", message_id="no-stream")
    assert run_relay(transport).dead == 1
    [span] = finished("skipqueue publish audit")
    assert span.attributes["skipqueue.outbox.outcome"] == "dead"
    assert span.status.status_code == StatusCode.ERROR
    [event] = [e for e in span.events if e.name == "exception"]
    assert "no JetStream stream" in event.attributes["exception.message"]


@pytest.mark.rabbitmq
def test_with_tracing_off_the_relay_talks_to_its_transport_directly(rabbitmq, settings):
    settings.SKIPQUEUE_TRACING = False
    transport, queue = rabbitmq
    relay = Relay("default", transport, "relay-a")
    assert relay.transport is transport
    publish("orders", {"n": 1}, key="k")
    assert relay.run_round().sent == 1
    [received] = queue.drain()
    assert "traceparent" not in received.headers
    assert not finished("skipqueue")
    settings.SKIPQUEUE_TRACING = True
    assert isinstance(Relay("default", transport, "relay-b").transport, TracedTransport)
