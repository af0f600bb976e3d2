"""The shared RabbitMQ and NATS servers, seen from tests: a vhost or a stream of each test's own.

Tests never restart the shared servers; tests that break a broker start a private one.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pika

RABBITMQ_PORT = 5672
NATS_PORT = 4222


def reachable(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class Received:
    """A message as a consumer saw it."""

    body: Any
    message_id: str
    key: str
    headers: dict[str, Any]
    persistent: bool = True


@contextmanager
def rabbitmq_vhost() -> Iterator[str]:
    """Create a vhost of the test's own on the shared RabbitMQ; yield its amqp:// URL."""
    vhost = f"skq-test-{secrets.token_hex(4)}"
    subprocess.run(["rabbitmqctl", "-q", "add_vhost", vhost], check=True, capture_output=True)
    subprocess.run(
        ["rabbitmqctl", "-q", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"amqp://guest:guest@127.0.0.1:{RABBITMQ_PORT}/{vhost}"
    finally:
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True)


class RabbitQueue:
    """A queue bound to an exchange, read back with basic_get."""

    def __init__(
        self, url: str, exchange: str, queue: str, binding: str = "#", *, durable: bool = True
    ) -> None:
        parameters = pika.URLParameters(url)
        parameters.heartbeat = 0  # the test reads only at the end: no heartbeats to miss
        self.connection = pika.BlockingConnection(parameters)
        self.channel = self.connection.channel()
        self.channel.exchange_declare(exchange, exchange_type="topic", durable=True)
        self.channel.queue_declare(queue, durable=durable)
        self.channel.queue_bind(queue, exchange, routing_key=binding)
        self.queue = queue

    def drain(self) -> list[Received]:
        received = []
        while True:
            method, properties, body = self.channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                return received
            received.append(
                Received(
                    json.loads(body),
                    properties.message_id,
                    method.routing_key,
                    dict(properties.headers or {}),
                    properties.delivery_mode == 2,
                )
            )

    def count(self) -> int:
        return self.channel.queue_declare(self.queue, passive=True).method.message_count

    def close(self) -> None:
        if self.connection.is_open:
            self.connection.close()


class NatsStream:
    """A JetStream stream of the test's own capturing ``<subject>.>``; read back in order."""

    def __init__(self, subject: str, url: str = f"nats://127.0.0.1:{NATS_PORT}",
                 name: str | None = None, **config: Any) -> None:  # fmt: skip
        """Create the stream, or with ``name`` read an existing one."""
        import nats

        self.subject = subject
        self.name = name or f"SKQ_{secrets.token_hex(4)}"
        self.url = url
        self._loop = asyncio.new_event_loop()
        self._nc = self._run(nats.connect(url))
        self._js = self._nc.jetstream()
        if name is None:
            subjects = [subject, f"{subject}.>"]
            self._run(self._js.add_stream(name=self.name, subjects=subjects, **config))

    def messages(self) -> list[Received]:
        async def read() -> list[Received]:
            info = await self._js.stream_info(self.name)
            received = []
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                if info.state.messages == 0:
                    break
                message = await self._js.get_msg(self.name, seq)
                headers = {name: _text(value) for name, value in (message.headers or {}).items()}
                received.append(
                    Received(
                        json.loads(message.data),
                        headers.get("Nats-Msg-Id", ""),
                        message.subject.removeprefix(self.subject).removeprefix("."),
                        headers,
                    )
                )
            return received

        return self._run(read())

    def close(self, *, delete: bool = True) -> None:
        try:
            if delete:
                self._run(self._js.delete_stream(self.name))
        finally:
            self._run(self._nc.close())
            self._loop.close()

    def _run(self, coroutine: Any) -> Any:
        return self._loop.run_until_complete(coroutine)


def _text(value: Any) -> str:
    """A header value as sent: nats-py reads a stored message's headers with the email
    parser, which gives a non-ASCII value as an ``email.header.Header`` of its raw bytes
    (its subscriptions parse the same bytes to ``str``)."""
    if isinstance(value, str):
        return value
    from email.header import decode_header

    parts = decode_header(value)
    return b"".join(p if isinstance(p, bytes) else p.encode() for p, _ in parts).decode()
