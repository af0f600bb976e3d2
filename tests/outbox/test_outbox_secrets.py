"""Broker credentials stay out of sight: redact() hides passwords, NATS tokens and secret query
parameters of every server of a URL, skipqueue_relay neither prints nor stores them, and it
takes the URL from the environment so that it need not be on the command line (``ps``).
"""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_skipqueue.outbox.models import OutboxRelay
from django_skipqueue.outbox.transports import redact
from tests.support.brokers import NATS_PORT

pytestmark = pytest.mark.vendor_neutral

SECRET = "s3cr3t-T0ken"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("amqp://guest:s3cr3t-T0ken@h:5672/%2F", "amqp://guest:***@h:5672/%2F"),
        ("nats://s3cr3t-T0ken@h:4222", "nats://***@h:4222"),
        ("tls://s3cr3t-T0ken@h:4222", "tls://***@h:4222"),
        (
            "nats://a:s3cr3t-T0ken@h1:4222,nats://b:s3cr3t-T0ken@h2:4222,nats://s3cr3t-T0ken@h3",
            "nats://a:***@h1:4222,nats://b:***@h2:4222,nats://***@h3",
        ),
        ("amqp://u:s3cr3t@T0ken,x@h/v", "amqp://u:***@h/v"),  # unescaped '@' and ','
        (
            "amqps://h/v?heartbeat=10&password=s3cr3t-T0ken&auth_token=s3cr3t-T0ken",
            "amqps://h/v?heartbeat=10&password=***&auth_token=***",
        ),
        ("nats://h:4222?token=s3cr3t-T0ken", "nats://h:4222?token=***"),
        ("amqp://h/?ssl_options=s3cr3t-T0ken", "amqp://h/?ssl_options=***"),
        ("amqp://127.0.0.1:5672/%2F", "amqp://127.0.0.1:5672/%2F"),
        ("nats://u:s3cr3t-T0ken@[::1", "nats://u:***@[::1"),  # does not parse: still hidden
    ],
)
def test_redact_hides_every_secret_of_every_server(url, shown):
    assert redact(url) == shown
    assert "s3cr3t" not in redact(url) and "T0ken" not in redact(url)


NATS_WITH_TOKEN = f"nats://{SECRET}@127.0.0.1:{NATS_PORT}"


@pytest.mark.nats
@pytest.mark.mysql
@pytest.mark.django_db(transaction=True)
def test_the_relay_takes_its_url_from_the_environment_and_shows_no_secret(monkeypatch, caplog):
    # The test project reads SKIPQUEUE_OUTBOX_BROKER_URL into the setting: unset it, so the
    # command itself must read the environment.
    monkeypatch.setenv("SKIPQUEUE_OUTBOX_BROKER_URL", NATS_WITH_TOKEN)
    out, err = io.StringIO(), io.StringIO()
    with override_settings(SKIPQUEUE_OUTBOX_BROKER_URL=None), caplog.at_level(logging.DEBUG):
        call_command("skipqueue_relay", "--burst", stdout=out, stderr=err)
    printed = out.getvalue() + err.getvalue() + caplog.text
    assert f"publishing to nats://***@127.0.0.1:{NATS_PORT}" in printed
    assert SECRET not in printed
    assert "process list" not in printed, "no warning: the URL was not on the command line"
    assert OutboxRelay.objects.get().broker == f"nats://***@127.0.0.1:{NATS_PORT}"


@pytest.mark.nats
@pytest.mark.mysql
@pytest.mark.django_db(transaction=True)
def test_a_url_on_the_command_line_is_shown_redacted_with_a_warning(caplog):
    err = io.StringIO()
    with caplog.at_level(logging.DEBUG):
        call_command("skipqueue_relay", "--burst", "--broker", NATS_WITH_TOKEN, stderr=err)
    assert SECRET not in err.getvalue() + caplog.text
    assert "SKIPQUEUE_OUTBOX_BROKER_URL" in err.getvalue(), "it says how to keep it off ps"
    assert SECRET not in OutboxRelay.objects.get().broker


def test_a_url_refused_as_an_argument_is_shown_redacted():
    with pytest.raises(CommandError) as refused:
        call_command("skipqueue_relay", "--burst", "--broker", f"nats://u:{SECRET}@h:port")
    assert "is not a URL" in str(refused.value)
    assert SECRET not in str(refused.value)
