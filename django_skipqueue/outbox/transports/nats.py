"""NATS JetStream with nats-py: publish with an ack, Nats-Msg-Id for JetStream's dedup window."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import nats
import nats.errors
import nats.js.errors

from ...exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected
from . import Outgoing, Result

logger = logging.getLogger(__name__)

#: Seconds to wait for JetStream's ack of one message.
ACK_TIMEOUT = 10.0


class NatsTransport:
    """Publish to ``<subject>.<key>`` (or the subject alone without a key) on JetStream."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._js: Any = None

    def connect(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._client = self._run(
                nats.connect(
                    self.url, allow_reconnect=False, connect_timeout=5, max_reconnect_attempts=0
                )
            )
        except Exception as error:
            self.close()
            raise BrokerUnavailable(f"NATS unreachable: {error!r}") from error
        self._js = self._client.jetstream(timeout=ACK_TIMEOUT)

    def declare(self, destinations: Iterable[str]) -> None:
        """Check that a stream captures each subject: JetStream streams are the operator's."""
        for subject in destinations:
            try:
                self._run(self._js.find_stream_name_by_subject(f"{subject}.x"))
            except nats.js.errors.NotFoundError as error:
                raise BrokerUnavailable(f"no JetStream stream captures {subject}.>") from error

    def send(self, message: Outgoing) -> None:
        if self._client is None or not self._client.is_connected:
            raise BrokerUnavailable("NATS connection is closed")
        subject = f"{message.destination}.{message.key}" if message.key else message.destination
        headers = {**message.headers, "Nats-Msg-Id": message.message_id}
        try:
            self._run(self._js.publish(subject, message.body, headers=headers))
        except (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError) as error:
            raise MessageRejected(f"no JetStream stream captures {subject!r}") from error
        except nats.errors.MaxPayloadError as error:
            raise MessageRejected(f"over the server's max_payload: {error}") from error
        except nats.js.errors.APIError as error:
            raise MessageNotConfirmed(f"JetStream refused {subject!r}: {error}") from error
        except Exception as error:
            if self._client is not None and self._client.is_connected:
                raise MessageNotConfirmed(f"no ack from JetStream: {error!r}") from error
            self.close()
            raise BrokerUnavailable(f"NATS connection lost: {error!r}") from error

    def send_many(self, messages: Sequence[Outgoing]) -> list[Result | None]:
        """Publish one message after the other, each with its ack."""
        results: list[Result | None] = []
        for message in messages:
            try:
                self.send(message)
            except (MessageRejected, MessageNotConfirmed) as error:
                results.append(error)
            except BrokerUnavailable as error:
                return [*results, error]  # the rest were never sent
            else:
                results.append(None)
        return results

    def keepalive(self) -> None:
        """Let the client answer the server's pings while the relay waits."""
        if self._client is not None:
            self._run(asyncio.sleep(0.01))  # a few loop turns: read, answer PINGs, flush
            if not self._client.is_connected:
                self.close()
                raise BrokerUnavailable("NATS connection lost")

    def close(self) -> None:
        client, self._client, self._js = self._client, None, None
        if client is not None and not client.is_closed:
            try:
                self._run(client.close())
            except Exception:
                logger.debug("closing the NATS connection failed", exc_info=True)
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.close()

    def _run(self, coroutine: Any) -> Any:
        if self._loop is None:
            coroutine.close()
            raise BrokerUnavailable("NATS connection is closed")
        return self._loop.run_until_complete(coroutine)
