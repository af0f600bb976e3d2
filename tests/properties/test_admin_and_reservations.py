"""The admin's search boxes and actions, and reserve(), against generated hostile input.

An admin page answers every search with a page (or Django's own "invalid lookup" redirect),
never a server error; an action given ids that name nothing changes nothing. reserve() holds
units under exactly the holder and reference it was given, or raises InvalidReservation and
holds nothing.
"""

from __future__ import annotations

from urllib.parse import quote_from_bytes, urlencode

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from hypothesis import strategies as st

from django_skipqueue import reservations
from django_skipqueue.exceptions import InvalidReservation
from django_skipqueue.reservations.models import LedgerEntry, Reservation
from tests.properties.strategies import hostile_text, run, seeded


def our_admins() -> list[tuple[str, list[str]]]:
    """(changelist URL, action names) of every model admin the package registers."""
    pages = []
    for model, model_admin in admin.site._registry.items():
        if type(model_admin).__module__.startswith("django_skipqueue."):
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            actions = [name for name in (model_admin.get_action_choices(_Request()) or ())]
            pages.append((url, [name for name, _ in actions if name]))
    return pages


class _Request:
    """Just enough of a request for get_action_choices: a superuser."""

    user = type("Superuser", (), {"has_perm": lambda *a: True, "is_superuser": True})()
    GET: dict[str, str] = {}


@pytest.fixture
def client(db) -> Client:
    User.objects.create_superuser("root", password="pw")
    web = Client()
    web.login(username="root", password="pw")
    return web


@pytest.mark.django_db
@seeded
def test_every_search_box_answers_any_text_with_a_page(client, seed_value):
    pages = our_admins()
    assert len(pages) >= 8, pages

    def body(text: str, page: int) -> None:
        url, _ = pages[page % len(pages)]
        # The bytes an attacker can send: a lone surrogate as the invalid UTF-8 it encodes to.
        query = quote_from_bytes(text.encode("utf-8", "surrogatepass"))
        response = client.get(f"{url}?q={query}")
        assert response.status_code in (200, 302), (url, text, response.status_code)

    run(seed_value, body, hostile_text, st.integers(0, 100))


@pytest.mark.django_db
@seeded
def test_every_action_given_ids_that_name_nothing_changes_nothing(client, seed_value):
    pages = [(url, actions) for url, actions in our_admins() if actions]

    def body(ids: list[str], page: int, which: int) -> None:
        url, actions = pages[page % len(pages)]
        action = actions[which % len(actions)]
        fields = [("action", action), ("index", "0")] + [("_selected_action", i) for i in ids]
        body = urlencode(
            [(name, value.encode("utf-8", "surrogatepass")) for name, value in fields]
        )
        response = client.post(url, body, content_type="application/x-www-form-urlencoded")
        assert response.status_code in (200, 302), (url, action, ids, response.status_code)

    run(seed_value, body, st.lists(hostile_text, max_size=3), st.integers(0, 100),
        st.integers(0, 10))  # fmt: skip


@pytest.mark.django_db(transaction=True)
@seeded
def test_reserve_keeps_holder_and_reference_as_given_or_holds_nothing(seed_value):
    reservations.restock(1, 1, 3)

    def body(holder: str, reference: str) -> None:
        before = (Reservation.objects.count(), LedgerEntry.objects.count())
        try:
            held = reservations.reserve(1, 1, 1, holder=holder, ttl=60, reference=reference)
        except InvalidReservation:
            assert (Reservation.objects.count(), LedgerEntry.objects.count()) == before
            assert reservations.available(1, 1) == 3
            return
        stored = Reservation.objects.get(pk=held.pk)
        assert (stored.holder, stored.reference) == (holder, reference)
        reservations.release(held)

    run(seed_value, body, hostile_text, hostile_text, examples=20)
