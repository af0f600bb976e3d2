"""manage.py skipqueue_relay: publish the outbox to RabbitMQ or NATS JetStream."""

from __future__ import annotations

import argparse
import os
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError

from django_skipqueue.conf import get_settings
from django_skipqueue.db.outage import explain
from django_skipqueue.exceptions import BrokerUnavailable
from django_skipqueue.management.arguments import database_named, url_with_scheme
from django_skipqueue.management.daemons import database_ready, show_logs
from django_skipqueue.management.database import require_migrated
from django_skipqueue.outbox.process import RelayProcess
from django_skipqueue.outbox.transports import SCHEMES, redact

#: The argument type of --broker, and the check of SKIPQUEUE_OUTBOX_BROKER_URL.
broker_url = url_with_scheme(SCHEMES, shown=redact)
#: Read when neither --broker nor the setting names a broker: no password on the command line.
ENVIRONMENT_VARIABLE = "SKIPQUEUE_OUTBOX_BROKER_URL"


class Command(BaseCommand):
    help = (
        "Publish the messages of the outbox to the broker, in order per key, and delete each "
        "one once the broker confirmed it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--broker",
            metavar="URL",
            type=broker_url,
            help=(
                "Broker URL, amqp://... or nats://... (default: the SKIPQUEUE_OUTBOX_BROKER_URL "
                "setting, else the environment variable of that name; either keeps a password "
                "out of the process list)."
            ),
        )
        parser.add_argument(
            "--burst",
            action="store_true",
            help="Publish what is waiting, then exit (for cron jobs, tests and deployments).",
        )
        parser.add_argument(
            "--database",
            default=DEFAULT_DB_ALIAS,
            metavar="ALIAS",
            help="Database alias of the outbox table (default: %(default)r).",
        )

    def execute(self, *args: Any, **options: Any) -> Any:
        """Wait for the database before the checks and the loop (--burst: one line, exit 1)."""
        show_logs(options["verbosity"])
        using = database_named(options["database"])
        if database_ready(using, once=options["burst"]):
            return super().execute(*args, **options)
        return None

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["broker"] or _setting_url()
        using = database_named(options["database"])
        require_migrated(using, "django_skipqueue.outbox")
        relay = RelayProcess(using, url, burst=options["burst"])
        self.stderr.write(f"relay {relay.name} publishing to {redact(url)}")
        if options["broker"] and redact(url) != url:
            self.stderr.write(
                "--broker shows the URL's credentials in the process list: set "
                f"{ENVIRONMENT_VARIABLE} (a setting or an environment variable) instead."
            )
        try:
            totals = relay.run()
        except BrokerUnavailable as error:
            raise CommandError(f"The broker stayed unreachable: {error}") from error
        except DatabaseError as error:  # --burst only: a loop waits for it
            raise CommandError(explain(using, error)) from error
        self.stdout.write(
            f"sent {totals.sent}, retried {totals.retried}, dead letters {totals.dead}, "
            f"resent after an unsettled claim {totals.resent}"
        )


def _setting_url() -> str:
    """SKIPQUEUE_OUTBOX_BROKER_URL, the setting or else the environment variable, checked like
    --broker; CommandError if unusable."""
    url = get_settings().OUTBOX_BROKER_URL or os.environ.get(ENVIRONMENT_VARIABLE)
    if not url:
        raise CommandError(
            "No broker: pass --broker or set SKIPQUEUE_OUTBOX_BROKER_URL. It may be a setting "
            "or an environment variable of that name."
        )
    try:
        return broker_url(url)
    except argparse.ArgumentTypeError as error:
        raise CommandError(f"SKIPQUEUE_OUTBOX_BROKER_URL {error}") from None
