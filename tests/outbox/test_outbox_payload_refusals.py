"""A payload no database stores alike is refused by publish() with InvalidMessage, not by the
server's CHECK constraint (which surfaced as IntegrityError, or as DuplicateMessage from
publish_many), and the next message goes in."""

from __future__ import annotations

import pytest

from django_skipqueue.exceptions import InvalidMessage
from django_skipqueue.outbox import Message, publish, publish_many
from django_skipqueue.outbox.models import OutboxMessage
from tests.properties.strategies import nested

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (None, "None"),
        (nested(32), "more than 31 deep"),
        (nested(100_000), "too deep"),
        ({"text": "\ud800"}, "lone surrogate"),
        ({"text": "a\x00b"}, "NUL"),
    ],
    ids=["null", "depth-32", "depth-100000", "surrogate", "nul"],
)
def test_a_payload_no_database_stores_alike_is_refused_and_the_next_goes_in(payload, says):
    with pytest.raises(InvalidMessage, match=says):
        publish("orders", payload, key="k")
    with pytest.raises(InvalidMessage, match=says):
        publish_many([Message("orders", {"n": 1}), Message("orders", payload)])
    assert not OutboxMessage.objects.exists()
    publish("orders", nested(31), key="k", message_id="deepest")
    assert OutboxMessage.objects.get().payload == nested(31)


@pytest.mark.parametrize("blank", ["\xa0", "\u2003", "\u3000"])
def test_a_message_id_that_ends_in_any_unicode_blank_is_refused(blank):
    """NATS trims every Unicode blank around a header value (Nats-Msg-Id): a no-break space at
    the end arrived as another id (found by the property tests)."""
    with pytest.raises(InvalidMessage, match="blank"):
        publish("orders", {"n": 1}, message_id=f"m-1{blank}")
    with pytest.raises(InvalidMessage, match="blank"):
        publish("orders", {"n": 1}, message_id=f"{blank}m-1")
    assert publish("orders", {"n": 1}, message_id=f"m{blank}1").message_id == f"m{blank}1"
