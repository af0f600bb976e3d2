"""The transactional outbox: publish() in the business transaction, a relay sends it on.

Add ``django_skipqueue.outbox`` to INSTALLED_APPS. The functions import the models when
called: this module is imported while the app registry loads.

Imports of the core only what any process may: ``apps``, ``conf``, ``exceptions``, ``checks``,
``durations``, ``wakeup``, ``db``, owner ids, ``monitoring.tracing`` and ``admin.readonly``;
never the job queue's ``worker`` loop, ``maintenance`` or the job admin's other modules. The
core imports nothing of it but its figures for ``skipqueue_status``, ``skipqueue_health`` and
the admin dashboard.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django_skipqueue.apps import require_installed

if TYPE_CHECKING:
    from django_skipqueue.outbox.models import OutboxMessage
    from django_skipqueue.outbox.writing import Message

__all__ = ["Message", "inbox", "publish", "publish_many"]

#: The name of this app in INSTALLED_APPS.
APP = "django_skipqueue.outbox"


def publish(
    topic: str,
    payload: Any,
    *,
    key: str = "",
    message_id: str | None = None,
    headers: Mapping[str, str] | None = None,
    using: str | None = None,
) -> OutboxMessage:
    """Write one message to the outbox in the current transaction on ``using``.

    Messages of one ``key`` reach the broker in the order they were written. Without a
    ``message_id`` the message gets a random one, carried to the broker for deduplication.
    """
    require_installed(APP, "django_skipqueue.outbox.publish()")
    from django_skipqueue.outbox.writing import Message, publish_messages

    message = Message(topic, payload, key=key, message_id=message_id, headers=headers)
    return publish_messages([message], using)[0]


def publish_many(messages: Iterable[Message], *, using: str | None = None) -> list[OutboxMessage]:
    """Write several messages in one INSERT: all of them, or none if one is refused."""
    require_installed(APP, "django_skipqueue.outbox.publish_many()")
    from django_skipqueue.outbox.writing import publish_messages

    return publish_messages(messages, using)


def __getattr__(name: str) -> Any:
    """Import ``Message`` and ``inbox`` on first use (they import the models)."""
    if name == "Message":
        from django_skipqueue.outbox.writing import Message

        return Message
    if name == "inbox":
        return importlib.import_module(f"{__name__}.inbox")
    raise AttributeError(name)
