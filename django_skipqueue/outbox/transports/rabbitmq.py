"""RabbitMQ with pika: pipelined publisher confirms, mandatory, persistent delivery, message_id.

A batch is published on one channel in order, with every confirm still in flight, and the
transport then waits for all of them. The broker's acks and nacks carry the delivery tag (or,
with ``multiple``, every tag up to it), and a message it could not route comes back as a
return before its ack, so each message gets its own answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pika
import pika.exceptions
import pika.frame
import pika.spec
from pika.adapters.utils.connection_workflow import AMQPConnectorException

from django_skipqueue.exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected
from django_skipqueue.outbox.transports import Outgoing, Result, Transport, Unanswered
from django_skipqueue.outbox.transports.names import MAX_SHORT_STRING_BYTES, length_problem

logger = logging.getLogger(__name__)
#: Characters that fit a short string whatever they are (four bytes of UTF-8 at most each).
SURELY_SHORT = MAX_SHORT_STRING_BYTES // 4

#: Defaults unless the URL sets them: a dead broker is noticed within a few heartbeats, a
#: broker that blocks publishers (a memory or disk alarm) fails the publish instead of holding
#: it past the partition's lease, and one that accepts the connection but never completes the
#: handshake is unreachable after 10 s (pika's 15 s, times three failed rounds, kept a
#: ``--burst`` run waiting 45 s).
URL_DEFAULTS = {
    "heartbeat": 10,
    "blocked_connection_timeout": 10.0,
    "socket_timeout": 5.0,
    "stack_timeout": 10.0,
}
#: Channel-closing reply codes that no resend cures: the message itself is refused.
REFUSED_FOR_GOOD = frozenset({406})  # PRECONDITION_FAILED: over max_message_size
#: Seconds to wait for the confirms of one batch before giving the connection up.
CONFIRM_TIMEOUT = 30.0


class RabbitMQTransport(Transport):
    """Publish to the exchange of the topic with the key as routing key."""

    #: The broker, as OpenTelemetry's ``messaging.system`` names it (the relay's spans).
    system = "rabbitmq"

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: pika.BlockingConnection | None = None
        self._channel: pika.adapters.blocking_connection.BlockingChannel | None = None
        #: Delivery tag of the channel's last publish; tags count from 1 per channel.
        self._tag = 0
        #: The batch in flight: answers by delivery tag, and returned tags.
        self._waiting: dict[int, Result | object | None] = {}
        self._returned: set[int] = set()
        self._ids: dict[str, list[int]] = {}
        #: Tags of the batch still without an answer, and the lowest tag that may be one.
        self._open = 0
        self._oldest = 1
        self._closed: pika.exceptions.ChannelClosed | None = None

    def connect(self) -> None:
        try:
            self._connection = pika.BlockingConnection(parameters(self.url))
            self._open_channel()
        # OSError: a name not found. AMQPConnectorException: the handshake timed out (a broker
        # that accepts the connection and never answers): not an AMQPError.
        except (pika.exceptions.AMQPError, AMQPConnectorException, OSError) as error:
            self.close()
            raise BrokerUnavailable(f"RabbitMQ unreachable: {error!r}") from error

    def declare(self, destinations: Iterable[str]) -> None:
        channel = self._ready_channel()
        for exchange in destinations:
            channel.exchange_declare(exchange, exchange_type="topic", durable=True)

    def send_many(
        self, messages: Sequence[Outgoing], while_waiting: Callable[[], object] | None = None
    ) -> list[Result | None]:
        """Publish ``messages`` in order with their confirms in flight; return each one's answer.

        ``None`` is a confirm. When the broker closes the channel, the messages it had not
        answered get :class:`Unanswered` (send them again one at a time to learn which one
        it refused); for a lone message the refusal itself is its answer.
        """
        self._waiting, self._returned, self._ids, self._closed = {}, set(), {}, None
        self._open, self._oldest = 0, self._tag + 1
        # Per message: its delivery tag, or its refusal when it never left (see _hand_over).
        slots: list[int | Result] = []
        try:
            impl: Any = self._ready_channel()._impl  # underneath: publishes without waiting
            for message in messages:
                slots.append(self._hand_over(impl, message))
            if while_waiting is not None:
                # pika writes on its next I/O turn: put the batch on the wire first.
                assert self._connection is not None
                self._connection.process_data_events(0)
                while_waiting()
            self._wait(sum(isinstance(slot, int) for slot in slots))
        except (pika.exceptions.AMQPError, BrokerUnavailable) as error:
            self.close()
            lost = BrokerUnavailable(f"RabbitMQ connection lost: {error!r}")
            # Messages after the publish that broke were never handed over: no answer.
            answers = [self._waiting.get(s) if isinstance(s, int) else s for s in slots]
            return [lost if a is None else _result(a) for a in answers] or [lost]
        return [_result(self._waiting[s]) if isinstance(s, int) else s for s in slots]

    def _hand_over(self, impl: Any, message: Outgoing) -> int | Result:
        """Publish ``message`` without waiting; return its delivery tag, or its refusal.

        A message RabbitMQ cannot carry (a short string over 255 bytes: the key, the id, a
        header name; text that is not UTF-8) is refused here, for good, before anything of it
        is written. pika marshals a message's frames before writing any of them, so an error
        it raises while doing so belongs to this message alone, never to the connection: the
        message is retried (an attempt spent) and becomes a dead letter at the last attempt.
        """
        problem = wire_problem(message)
        if problem is not None:
            return MessageRejected(f"RabbitMQ cannot carry it: {problem}")
        try:
            impl.basic_publish(
                message.destination,
                message.key,
                message.body,
                _properties(message),
                mandatory=True,
            )
        except (pika.exceptions.AMQPConnectionError, pika.exceptions.AMQPChannelError):
            raise
        except Exception as error:
            return MessageNotConfirmed(f"pika could not encode the message: {error!r}")
        self._tag += 1
        self._waiting[self._tag] = None
        self._open += 1
        self._ids.setdefault(message.message_id, []).append(self._tag)
        return self._tag

    def keepalive(self) -> None:
        if self._connection is None:
            return
        try:
            self._connection.process_data_events(0)
        except pika.exceptions.AMQPError as error:
            self.close()
            raise BrokerUnavailable(f"RabbitMQ connection lost: {error!r}") from error

    def close(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except Exception:
                logger.debug("closing the RabbitMQ connection failed", exc_info=True)

    def _wait(self, count: int) -> None:
        """Serve the connection until every tag of the batch has its answer."""
        assert self._connection is not None
        deadline = time.monotonic() + CONFIRM_TIMEOUT
        while self._open:
            if self._closed is not None:
                self._channel = None
                for tag, answer in self._waiting.items():
                    if answer is None:
                        self._waiting[tag] = self._refusal(count)
                self._open = 0
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrokerUnavailable(f"no confirm from RabbitMQ in {CONFIRM_TIMEOUT:g}s")
            self._connection.process_data_events(time_limit=left)

    def _refusal(self, count: int) -> Result:
        assert self._closed is not None
        error = self._closed
        text = f"channel closed by RabbitMQ ({error.reply_code} {error.reply_text})"
        if count > 1:
            return Unanswered(text)
        if error.reply_code in REFUSED_FOR_GOOD:
            return MessageRejected(text)
        return MessageNotConfirmed(text)

    def _on_confirm(self, frame: pika.frame.Method) -> None:
        method = frame.method
        tag, nack = method.delivery_tag, isinstance(method, pika.spec.Basic.Nack)
        # A multiple ack answers every tag up to its own: walk them from the oldest open one.
        first = self._oldest if method.multiple else tag
        for waiting in range(first, tag + 1):
            if self._waiting.get(waiting, _CONFIRMED) is not None:
                continue  # answered already, or not of this batch
            if nack:
                self._waiting[waiting] = MessageNotConfirmed(f"nacked by RabbitMQ (tag {waiting})")
            elif waiting in self._returned:
                self._waiting[waiting] = MessageRejected("unroutable: no queue bound for it")
            else:
                self._waiting[waiting] = _CONFIRMED
            self._open -= 1
        while self._waiting.get(self._oldest, None) is not None:
            self._oldest += 1
        if not self._open:
            self._wake()

    def _on_return(self, _channel: Any, method: Any, properties: Any, _body: bytes) -> None:
        tags = self._ids.get(properties.message_id) or []
        open_tags = [t for t in tags if t not in self._returned]
        if open_tags:
            self._returned.add(open_tags[0])
            logger.debug("returned: %s %s", method.exchange, method.routing_key)

    def _on_channel_closed(self, _channel: Any, reason: Exception) -> None:
        if isinstance(reason, pika.exceptions.ChannelClosed):
            self._closed = reason
        else:
            self._closed = pika.exceptions.ChannelClosed(0, repr(reason))
        self._wake()

    def _wake(self) -> None:
        """Make the connection's wait return: the batch may be answered."""
        if self._connection is not None and self._connection.is_open:
            self._connection.add_callback_threadsafe(_nothing)

    def _ready_channel(self) -> pika.adapters.blocking_connection.BlockingChannel:
        if self._connection is None or not self._connection.is_open:
            raise BrokerUnavailable("RabbitMQ connection is closed")
        if self._channel is None or not self._channel.is_open:
            self._open_channel()
        assert self._channel is not None
        return self._channel

    def _open_channel(self) -> None:
        assert self._connection is not None
        self._channel = self._connection.channel()
        self._tag = 0
        impl: Any = self._channel._impl
        impl.add_on_close_callback(self._on_channel_closed)
        impl.add_on_return_callback(self._on_return)
        impl.confirm_delivery(self._on_confirm)


#: Marks a confirmed tag while the batch is in flight (None: no answer yet).
_CONFIRMED = object()


def _result(answer: object) -> Result | None:
    """A tag's answer as send_many returns it: None for a confirm (or no answer yet)."""
    return answer if isinstance(answer, Exception) else None  # type: ignore[return-value]


def _nothing() -> None:
    """A no-op callback: queuing it ends process_data_events' wait."""


def wire_problem(message: Outgoing) -> str | None:
    """What in ``message`` an AMQP frame cannot hold, or None (rows stored before publish()
    checked byte lengths may hold it). Text of at most a quarter of the limit in characters
    fits whatever it holds: only longer text is measured (a call per message, on the relay's
    hot path)."""
    named = (
        ("exchange", message.destination),
        ("routing key", message.key),
        ("message id", message.message_id),
    )
    for what, text in named:
        if len(text) > SURELY_SHORT and (problem := length_problem(text)):
            return f"the {what} {problem}"
    for name in message.headers:
        if len(name) > SURELY_SHORT and (problem := length_problem(name)):
            return f"the header name {name[:40]!r} {problem}"
    return None


def _properties(message: Outgoing) -> pika.BasicProperties:
    return pika.BasicProperties(
        content_type="application/json",
        delivery_mode=pika.DeliveryMode.Persistent,
        message_id=message.message_id,
        headers=message.headers,
    )


def parameters(url: str) -> pika.URLParameters:
    """The connection parameters of ``url``, with URL_DEFAULTS for what it leaves out."""
    result = pika.URLParameters(url)
    for name, value in URL_DEFAULTS.items():
        if f"{name}=" not in url:
            setattr(result, name, value)
    return result
