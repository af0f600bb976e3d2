"""NATS JetStream with nats-py: acks awaited together, Nats-Msg-Id for JetStream's dedup window."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import nats
import nats.errors
import nats.js.errors

from django_skipqueue.exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected
from django_skipqueue.outbox.transports import MaybeTaken, Outgoing, Result, Transport
from django_skipqueue.outbox.transports.names import (
    characters_problem,
    header_name_problem,
    header_value_problem,
)

logger = logging.getLogger(__name__)

#: Seconds to wait for JetStream's acks of one batch.
ACK_TIMEOUT = 10.0


class NatsTransport(Transport):
    """Publish to ``<subject>.<key>`` (or the subject alone without a key) on JetStream."""

    #: The broker, as OpenTelemetry's ``messaging.system`` names it (the relay's spans).
    system = "nats"

    def __init__(self, url: str) -> None:
        self.url = url
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._js: Any = None

    def connect(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            # nats-py tries the servers again and again while max_reconnect_attempts is 0
            # (for ever, even with allow_reconnect off): 1 is two tries, then NoServersError.
            self._client = self._run(
                nats.connect(
                    self.url,
                    allow_reconnect=False,
                    connect_timeout=5,
                    max_reconnect_attempts=1,
                    reconnect_time_wait=0,
                    error_cb=_client_error,
                )
            )
        except Exception as error:
            self.close()
            raise BrokerUnavailable(f"NATS unreachable: {error!r}") from error
        self._js = self._client.jetstream(timeout=ACK_TIMEOUT)
        self._js._handle_async_reply = _refusals_answered(self._js)

    def declare(self, destinations: Iterable[str]) -> None:
        """Check that a stream captures each subject: JetStream streams are the operator's."""
        for subject in destinations:
            try:
                self._run(self._js.find_stream_name_by_subject(f"{subject}.x"))
            except nats.js.errors.NotFoundError as error:
                raise BrokerUnavailable(f"no JetStream stream captures {subject}.>") from error

    def send_many(
        self, messages: Sequence[Outgoing], while_waiting: Callable[[], object] | None = None
    ) -> list[Result | None]:
        """Publish ``messages`` in order, each with its reply subject, then await their acks
        together: JetStream stores a connection's messages in the order they arrive."""
        if self._client is None or not self._client.is_connected:
            return [BrokerUnavailable("NATS connection is closed")]
        try:
            sent = self._run(self._send_all(messages, flush=while_waiting is not None))
            if while_waiting is not None:
                while_waiting()  # outside the event loop: it may use the database
            answers: list[Result | None] = self._run(self._answers(sent))
        except BrokerUnavailable as error:
            self.close()
            return [error]
        if any(isinstance(answer, BrokerUnavailable) for answer in answers):
            self.close()
        return answers

    async def _send_all(
        self, messages: Sequence[Outgoing], *, flush: bool
    ) -> list[Result | asyncio.Future[Any] | None]:
        """Hand the messages to the client; with ``flush``, also onto the wire."""
        answers: list[Result | asyncio.Future[Any] | None] = []
        known = set(self._futures())
        for message in messages:
            try:
                answers.append(await self._publish(message, known))
            except BrokerUnavailable as error:
                answers.append(error)
                break  # the rest are never sent
        for _ in range(100 if flush else 0):  # the client's flusher writes (no round trip)
            if not self._client or not self._client.is_connected:
                break
            if not self._client.pending_data_size:
                break
            await asyncio.sleep(0)
        return answers

    async def _answers(
        self, answers: list[Result | asyncio.Future[Any] | None]
    ) -> list[Result | None]:
        """Await the acks together; one answer per message."""
        futures = [a for a in answers if isinstance(a, asyncio.Future)]
        if futures:
            await asyncio.wait(futures, timeout=ACK_TIMEOUT)
        return [self._answer(a) if isinstance(a, asyncio.Future) else a for a in answers]

    async def _publish(
        self, message: Outgoing, known: set[asyncio.Future[Any]]
    ) -> asyncio.Future[Any] | Result:
        """Hand ``message`` to the connection; return the future of its ack, or its refusal.

        ``known``: the acks awaited already, to which this message's is added.
        """
        subject = f"{message.destination}.{message.key}" if message.key else message.destination
        problem = wire_problem(subject, message)
        if problem is not None:
            return MessageRejected(f"NATS cannot carry it: {problem}")
        if len(message.body) > self._client.max_payload:
            return MessageRejected(
                f"over the server's max_payload ({len(message.body)} > "
                f"{self._client.max_payload} bytes)"
            )
        headers = {**message.headers, "Nats-Msg-Id": message.message_id}
        try:
            future: asyncio.Future[Any] = await self._js.publish_async(
                subject, message.body, headers=headers, wait_stall=ACK_TIMEOUT
            )
        except Exception as error:
            # Refused before it left: its future will never be answered.
            for orphan in set(self._futures()) - known:
                orphan.cancel()
            if self._client is not None and self._client.is_connected:
                return MessageNotConfirmed(f"NATS refused {subject!r}: {error!r}")
            raise BrokerUnavailable(f"NATS connection lost: {error!r}") from error
        known.add(future)
        return future

    def _futures(self) -> list[asyncio.Future[Any]]:
        """The acks nats-py still waits for (its own table, to cancel the orphan of a refusal)."""
        return list(getattr(self._js, "_publish_async_futures", {}).values())

    def _answer(self, future: asyncio.Future[Any]) -> Result | None:
        if not future.done():
            future.cancel()
            if self._client is not None and self._client.is_connected:
                # Written to the connection, unanswered: JetStream may have stored it.
                return MaybeTaken(f"no ack from JetStream in {ACK_TIMEOUT:g}s")
            return BrokerUnavailable("NATS connection lost before the ack")
        error = future.exception()
        if error is None:
            return None
        if isinstance(error, nats.errors.NoRespondersError | nats.js.errors.NoStreamResponseError):
            return MessageRejected("no JetStream stream captures the subject")
        if isinstance(error, nats.js.errors.APIError):
            return MessageNotConfirmed(f"JetStream refused it: {error}")
        return MaybeTaken(f"no ack from JetStream: {error!r}")

    def keepalive(self) -> None:
        """Let the client answer the server's pings while the relay waits."""
        if self._client is not None:
            self._run(asyncio.sleep(0.01))  # a few loop turns: read, answer PINGs, flush
            if not self._client.is_connected:
                self.close()
                raise BrokerUnavailable("NATS connection lost")

    def close(self) -> None:
        """Close the client, then its event loop; the loop also when the close is cut short
        (the relay gives up on a broker that does not answer)."""
        client, self._client, self._js = self._client, None, None
        try:
            if client is not None and not client.is_closed:
                self._run(client.close())
        except Exception:
            logger.debug("closing the NATS connection failed", exc_info=True)
        finally:
            loop, self._loop = self._loop, None
            if loop is not None:
                _cancel_pending(loop)
                loop.close()

    def _run(self, coroutine: Any) -> Any:
        if self._loop is None:
            coroutine.close()
            raise BrokerUnavailable("NATS connection is closed")
        return self._loop.run_until_complete(coroutine)


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what nats-py left running on a connection lost (its read loop, subscriptions):
    closed with them, the loop printed "Task was destroyed but it is pending!" per task."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _refusals_answered(js: Any) -> Callable[[Any], Awaitable[None]]:
    """JetStream's reply handler of ``js``, answering a refusal too.

    nats-py's own handler raises JetStream's error (a stream at its limits, a wrong expected
    sequence) instead of setting it on the publish's future: the refusal would look like a
    missing ack, retried for ever without spending an attempt. Installed before the first
    publish_async, which subscribes this attribute to the replies.
    """
    handle = js._handle_async_reply

    async def answered(msg: Any) -> None:
        try:
            await handle(msg)
        except nats.js.errors.APIError as error:
            token = msg.subject[len(js._nc._inbox_prefix) + 22 + 2 :]  # as nats-py's handler
            future = js._publish_async_futures.get(token)
            if future is not None and not future.done():
                future.set_exception(error)

    return answered


async def _client_error(error: Exception) -> None:
    """nats-py's report of an error it handles: the transport raises what the relay must know."""
    logger.debug("nats client error: %r", error)


def wire_problem(subject: str, message: Outgoing) -> str | None:
    """What in ``message`` would not reach a consumer as written, or None.

    publish() refuses all of it; rows stored before it did are refused here, for good: a CR/LF
    in a subject or a header would be read as protocol (or cut by nats-py), and ``*`` or
    ``>`` would make the subject a wildcard.
    """
    problem = characters_problem(subject)
    if problem is not None:
        return f"the subject {subject[:300]!r} {problem}"
    for name, value in {**message.headers, "Nats-Msg-Id": message.message_id}.items():
        problem = header_name_problem(name)
        if problem is not None:
            return f"the header name {name[:100]!r} {problem}"
        problem = header_value_problem(value) if isinstance(value, str) else "is not text"
        if problem is not None:
            return f"the header {name!r} {problem}"
    return None
