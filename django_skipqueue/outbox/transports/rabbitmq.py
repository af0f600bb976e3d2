"""RabbitMQ with pika: publisher confirms, mandatory, persistent, message_id as a property."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import pika
import pika.exceptions

from ...exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected
from . import Outgoing

logger = logging.getLogger(__name__)

#: Defaults unless the URL sets them: a dead broker is noticed within a few heartbeats, and a
#: broker that blocks publishers (a memory or disk alarm) fails the publish instead of holding
#: it past the partition's lease.
URL_DEFAULTS = {"heartbeat": 10, "blocked_connection_timeout": 10.0}
#: Channel-closing reply codes that no resend cures: the message itself is refused.
REFUSED_FOR_GOOD = frozenset({406})  # PRECONDITION_FAILED: over max_message_size


class RabbitMQTransport:
    """Publish to the exchange of the topic with the key as routing key."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: pika.BlockingConnection | None = None
        self._channel: pika.adapters.blocking_connection.BlockingChannel | None = None

    def connect(self) -> None:
        try:
            self._connection = pika.BlockingConnection(parameters(self.url))
            self._open_channel()
        except pika.exceptions.AMQPError as error:
            self.close()
            raise BrokerUnavailable(f"RabbitMQ unreachable: {error!r}") from error

    def declare(self, destinations: Iterable[str]) -> None:
        channel = self._ready_channel()
        for exchange in destinations:
            channel.exchange_declare(exchange, exchange_type="topic", durable=True)

    def send(self, message: Outgoing) -> None:
        properties = pika.BasicProperties(
            content_type="application/json",
            delivery_mode=pika.DeliveryMode.Persistent,
            message_id=message.message_id,
            headers=message.headers,
        )
        channel = self._ready_channel()
        try:
            channel.basic_publish(
                message.destination, message.key, message.body, properties, mandatory=True
            )
        except pika.exceptions.UnroutableError as error:
            raise MessageRejected(f"unroutable: no queue bound for {_where(message)}") from error
        except pika.exceptions.NackError as error:
            raise MessageNotConfirmed(f"nacked by RabbitMQ: {_where(message)}") from error
        except pika.exceptions.ChannelClosedByBroker as error:
            self._channel = None
            text = f"channel closed by RabbitMQ ({error.reply_code} {error.reply_text})"
            if error.reply_code in REFUSED_FOR_GOOD:
                raise MessageRejected(text) from error
            raise MessageNotConfirmed(text) from error
        except pika.exceptions.AMQPError as error:
            self.close()
            raise BrokerUnavailable(f"RabbitMQ connection lost: {error!r}") from error

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
        self._channel.confirm_delivery()


def parameters(url: str) -> pika.URLParameters:
    """The connection parameters of ``url``, with URL_DEFAULTS for what it leaves out."""
    result = pika.URLParameters(url)
    for name, value in URL_DEFAULTS.items():
        if f"{name}=" not in url:
            setattr(result, name, value)
    return result


def _where(message: Outgoing) -> str:
    return f"exchange {message.destination!r} routing key {message.key!r}"
