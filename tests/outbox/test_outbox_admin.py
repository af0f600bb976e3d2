"""Dead letters in the admin: listed, and sent again only by users holding the permission."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from django_skipqueue.outbox import publish
from django_skipqueue.outbox.models import MessageStatus, OutboxMessage

pytestmark = [pytest.mark.django_db, pytest.mark.vendor_neutral]

CHANGELIST = "admin:skipqueue_outbox_outboxmessage_changelist"


def staff(username: str, *codenames: str) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(codename=codename, content_type__app_label="skipqueue_outbox")
        )
    return user


@pytest.fixture
def letters() -> tuple[OutboxMessage, OutboxMessage]:
    dead = publish("orders", {"n": 1}, key="k", message_id="dead-1")
    OutboxMessage.objects.filter(pk=dead.pk).update(
        status=MessageStatus.DEAD, attempts=10, last_error="unroutable: no queue bound"
    )
    pending = publish("orders", {"n": 2}, key="k", message_id="pending-2")
    return dead, pending


def test_dead_letters_are_listed_with_their_error(client, letters):
    client.force_login(staff("viewer", "view_outboxmessage"))
    page = client.get(reverse(CHANGELIST), {"status__exact": "dead"})
    assert page.status_code == 200
    assert b"dead-1" in page.content and b"unroutable: no queue bound" in page.content
    assert b"pending-2" not in page.content
    assert b"send_again" not in page.content, "the action needs the resend permission"


def test_send_again_turns_dead_letters_pending_and_leaves_others_alone(client, letters):
    dead, pending = letters
    client.force_login(staff("operator", "view_outboxmessage", "resend_outboxmessage"))
    response = client.post(
        reverse(CHANGELIST),
        {"action": "send_again", "_selected_action": [dead.pk, pending.pk]},
        follow=True,
    )
    assert b"1 dead letter(s) will be sent again" in response.content
    assert b"1 message(s) left alone" in response.content
    dead.refresh_from_db()
    assert (dead.status, dead.attempts) == (MessageStatus.PENDING, 0)


def test_send_again_is_refused_without_the_permission(client, letters):
    dead, _ = letters
    client.force_login(staff("viewer", "view_outboxmessage"))
    client.post(reverse(CHANGELIST), {"action": "send_again", "_selected_action": [dead.pk]})
    dead.refresh_from_db()
    assert dead.status == MessageStatus.DEAD
