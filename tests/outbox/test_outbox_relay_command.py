"""skipqueue_relay's options: a mistake ends with a clear message before anything runs."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.vendor_neutral]


def relay(manage_py, env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*manage_py, "skipqueue_relay", "--burst", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis://127.0.0.1:6379", "must start with amqp://, amqps://, nats://, tls://"),
        ("amqp://", "names no host"),
        ("nats://127.0.0.1:port", "is not a URL"),
    ],
)
def test_a_broker_url_the_relay_cannot_use_is_a_usage_error(manage_py, child_env, url, says):
    done = relay(manage_py, child_env, "--broker", url)
    assert done.returncode == 2, done.stderr
    assert "argument --broker" in done.stderr and says in done.stderr
    assert "publishing to" not in done.stderr, "nothing ran"


def test_the_broker_setting_is_checked_like_the_option(manage_py, child_env):
    env = {**child_env, "SKIPQUEUE_OUTBOX_BROKER_URL": "kafka://127.0.0.1:9092"}
    done = relay(manage_py, env)
    assert done.returncode == 1
    assert "django_skipqueue.E201" in done.stderr, "the system checks name it first"
    done = relay(manage_py, env, "--skip-checks")
    assert done.returncode == 1
    assert "SKIPQUEUE_OUTBOX_BROKER_URL must start with amqp://" in done.stderr

    done = relay(manage_py, {**child_env, "SKIPQUEUE_OUTBOX_BROKER_URL": ""})
    assert done.returncode == 1
    assert "No broker: pass --broker or set SKIPQUEUE_OUTBOX_BROKER_URL." in done.stderr


def test_an_unknown_database_alias_is_named(manage_py, child_env):
    done = relay(manage_py, child_env, "--broker", "amqp://127.0.0.1", "--database", "outbox")
    assert done.returncode == 1
    assert "There is no database 'outbox' in DATABASES (there is default" in done.stderr
