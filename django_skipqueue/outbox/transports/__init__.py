"""Transports: one small interface, chosen by the broker URL's scheme.

A transport publishes a batch with the broker's confirms in flight and returns each message's
own answer, so the relay knows exactly which messages reached the broker when something
fails. A message's answer is ``None`` (confirmed), or (what :meth:`Transport.send` raises)
:class:`~django_skipqueue.exceptions.MessageRejected` for a message the broker will never
take (a dead letter), :class:`~django_skipqueue.exceptions.MessageNotConfirmed` for one to
retry later, and :class:`~django_skipqueue.exceptions.BrokerUnavailable` when the connection
is gone (the relay reconnects with backoff; no attempt is spent). :class:`MaybeTaken`, a
``MessageNotConfirmed``, answers a message the broker may have taken without saying so.

Owns that interface, the choice by scheme and one module per broker (``rabbitmq.py``,
``nats.py``). Must not import the outbox's models, relay or anything of the job queue but
its ``exceptions``: a transport only talks to its broker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from django.utils.module_loading import import_string

from django_skipqueue.exceptions import BrokerUnavailable, MessageNotConfirmed, MessageRejected


class Unanswered(MessageNotConfirmed):
    """The broker closed the channel before answering: send the message again on its own
    to learn whether it is the one refused."""


class MaybeTaken(MessageNotConfirmed):
    """No answer from the broker in time on a live connection: it may have taken the message,
    so the relay retries it later marked as a possible duplicate (``X-Skipqueue-Resent``)."""


#: A message's answer from :meth:`Transport.send_many`: ``None`` is the broker's confirm.
type Result = MessageRejected | MessageNotConfirmed | BrokerUnavailable


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message as the transport sends it: destination and key already resolved."""

    message_id: str
    #: The exchange (RabbitMQ) or subject (NATS) of the message's topic.
    destination: str
    key: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class Transport(Protocol):
    def connect(self) -> None:
        """Open the connection; raise BrokerUnavailable if the broker cannot be reached."""

    def declare(self, destinations: Iterable[str]) -> None:
        """Create (or check) the exchanges or streams the topics are sent to."""

    def send(self, message: Outgoing) -> None:
        """Publish ``message`` and wait for the broker's confirm; raise its refusal.

        The same for every transport (one that subclasses ``Transport`` inherits it):
        :meth:`send_many` of the message alone.
        """
        result = self.send_many([message])[0]
        if result is not None:
            raise result

    def send_many(
        self, messages: Sequence[Outgoing], while_waiting: Callable[[], object] | None = None
    ) -> list[Result | None]:
        """Publish ``messages`` in order, then wait for all their confirms: one answer each.

        ``BrokerUnavailable`` answers a message whose fate the lost connection hides. Fewer
        answers than messages: the connection broke and the rest were never sent.
        ``while_waiting``: called once, after the messages are on the wire and before the
        wait for their confirms (the relay claims its next round then); it does not raise.
        """

    def keepalive(self) -> None:
        """Serve the connection's heartbeats while the relay is idle."""

    def close(self) -> None:
        """Close the connection; never raise."""


SCHEMES = {
    "amqp": "django_skipqueue.outbox.transports.rabbitmq.RabbitMQTransport",
    "amqps": "django_skipqueue.outbox.transports.rabbitmq.RabbitMQTransport",
    "nats": "django_skipqueue.outbox.transports.nats.NatsTransport",
    "tls": "django_skipqueue.outbox.transports.nats.NatsTransport",
}


def transport_for(url: str) -> Transport:
    """Return an unconnected transport for ``url`` (amqp://, amqps://, nats://, tls://)."""
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise ValueError(f"No outbox transport for {scheme or 'this'} URL; use one of {known}.")
    transport: Transport = import_string(SCHEMES[scheme])(url)
    return transport


def redact(url: str) -> str:
    """Return ``url`` without its secrets, for logs, output and the relays table.

    Hidden: the password of every server of a multi-server URL (``a:***@h1,b:***@h2``), a
    credential without a password (a NATS token, ``nats://***@host``) and query parameters
    that may hold a secret (``?password=***``, ``token``, ``key``, ``ssl_options``, ...).
    The text is never parsed as one URL: one that does not parse keeps no secret either.
    """
    return _SECRET_PARAMETER.sub(r"\g<name>***", _USERINFO.sub(_hidden_userinfo, url))


#: A server's credentials: after ``scheme://``, a comma or the start, up to the last ``@``
#: before the path (a password may hold an unescaped ``@`` or ``,``).
_USERINFO = re.compile(r"(?P<lead>^|://|,)(?P<user>[^:@/?#,]*)(?P<secret>:[^/?#]*)?@")
_SECRET_PARAMETER = re.compile(
    r"(?P<name>[?&;][^=&#]*(?:pass|pwd|token|secret|key|auth|cred|sig|ssl)[^=&#]*=)[^&#]*",
    re.IGNORECASE,
)


def _hidden_userinfo(match: re.Match[str]) -> str:
    if match["secret"] is None:  # a credential alone: a NATS token (or a user name)
        return f"{match['lead']}***@"
    return f"{match['lead']}{match['user']}:***@"
