"""The relay's spans: one PRODUCER span per message it hands the broker, in the message's trace.

``publish()`` stored the publishing transaction's trace context in the message's headers (the
W3C ``traceparent``/``tracestate``, with ``SKIPQUEUE_TRACING`` on). With tracing on when the
relay starts, its transport is wrapped: each message of a batch gets a span whose parent is that
stored context, the span's own context replaces it in the headers that go on the wire (so a
consumer that extracts them continues the trace under the relay's publish), and the broker's
answer sets the span's outcome; a refusal or a lost connection is recorded on the span as an
error. Off, the relay talks to its transport directly and never calls into this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from django_skipqueue.exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected
from django_skipqueue.monitoring import tracing
from django_skipqueue.outbox.transports import Outgoing, Result, Transport, Unanswered

#: What the span's ``skipqueue.outbox.outcome`` says of each broker answer.
OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (BrokerUnavailable, "unknown"),
    (MessageRejected, "dead"),
    (Unanswered, "unanswered"),
    (MessageNotConfirmed, "retry"),
)


def traced(transport: Transport) -> Transport:
    """``transport`` itself with tracing off; with it on, a transport that opens the spans."""
    return TracedTransport(transport) if tracing.enabled() else transport


class TracedTransport(Transport):
    """Send through ``inner``, each message inside a span of its own trace."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        #: The broker, as OpenTelemetry names messaging systems (``rabbitmq``, ``nats``).
        self.system = getattr(inner, "system", type(inner).__name__)

    def connect(self) -> None:
        self.inner.connect()

    def declare(self, destinations: Iterable[str]) -> None:
        self.inner.declare(destinations)

    def keepalive(self) -> None:
        self.inner.keepalive()

    def close(self) -> None:
        self.inner.close()

    def send_many(
        self, messages: Sequence[Outgoing], while_waiting: Callable[[], object] | None = None
    ) -> list[Result | None]:
        """Open a span per message, send them as one batch, close each with its answer."""
        spans = [self._start(message) for message in messages]
        try:
            answers = self.inner.send_many([wire for _, wire in spans], while_waiting)
        except BaseException as error:
            for span, _ in spans:
                _end(span, error)
            raise
        unsent = BrokerUnavailable("never sent: the connection broke before it")
        for index, (span, _) in enumerate(spans):
            _end(span, answers[index] if index < len(answers) else unsent)
        return answers

    def _start(self, message: Outgoing) -> tuple[Any, Outgoing]:
        """Open the message's span under its stored context; return it and the wire message
        whose headers carry the span's own context instead."""
        from opentelemetry import propagate, trace
        from opentelemetry.trace import SpanKind

        headers = message.headers
        topic = headers.get("X-Skipqueue-Topic", message.destination)
        span = tracing.tracer().start_span(
            f"skipqueue publish {topic}",
            context=propagate.extract(headers),
            kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": self.system,
                "messaging.operation.type": "send",
                "messaging.destination.name": message.destination,
                "messaging.message.id": message.message_id,
                "skipqueue.outbox.topic": topic,
                "skipqueue.outbox.key": message.key,
                "skipqueue.outbox.id": headers.get("X-Skipqueue-Outbox-Id", ""),
                "skipqueue.outbox.attempt": int(headers.get("X-Skipqueue-Attempt", "0")),
            },
        )
        carrier = {k: v for k, v in headers.items() if k not in ("traceparent", "tracestate")}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        return span, replace(message, headers=carrier)


def _end(span: Any, answer: BaseException | None) -> None:
    """Set the broker's answer as the span's outcome, record a refusal as its error, end it."""
    from opentelemetry.trace import Status, StatusCode

    if answer is None:
        span.set_attribute("skipqueue.outbox.outcome", "sent")
    else:
        outcome = next((name for kind, name in OUTCOMES if isinstance(answer, kind)), "error")
        span.set_attribute("skipqueue.outbox.outcome", outcome)
        span.record_exception(answer)
        span.set_status(Status(StatusCode.ERROR, f"{type(answer).__name__}: {answer}"))
    span.end()
