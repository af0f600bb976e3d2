"""get_settings() is read once, and again whenever a SKIPQUEUE_* setting changes."""

from __future__ import annotations

from django.test import override_settings

from django_skipqueue.conf import get_settings


def test_the_settings_object_is_reused_until_a_setting_changes():
    first = get_settings()
    assert get_settings() is first
    with override_settings(SKIPQUEUE_MAX_ATTEMPTS=9):
        assert get_settings().MAX_ATTEMPTS == 9
    assert get_settings().MAX_ATTEMPTS == first.MAX_ATTEMPTS


def test_pytest_djangos_settings_fixture_is_seen(settings):
    settings.SKIPQUEUE_LEASE_SECONDS = 7.5
    assert get_settings().LEASE_SECONDS == 7.5
