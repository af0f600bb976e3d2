"""manage.py skipqueue_relay: publish the outbox to RabbitMQ or NATS JetStream."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS

from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import BrokerUnavailable
from django_skipqueue.outbox.process import RelayProcess
from django_skipqueue.outbox.transports import redact


class Command(BaseCommand):
    help = (
        "Publish the messages of the outbox to the broker, in order per key, and delete each "
        "one once the broker confirmed it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--broker",
            metavar="URL",
            help="Broker URL, amqp://... or nats://... (default: SKIPQUEUE_OUTBOX_BROKER_URL).",
        )
        parser.add_argument(
            "--burst",
            action="store_true",
            help="Publish what is waiting, then exit (for cron jobs, tests and deployments).",
        )
        parser.add_argument(
            "--database",
            default=DEFAULT_DB_ALIAS,
            help="Database alias of the outbox table (default: %(default)r).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["broker"] or get_settings().OUTBOX_BROKER_URL
        if not url:
            raise CommandError("No broker: pass --broker or set SKIPQUEUE_OUTBOX_BROKER_URL.")
        try:
            relay = RelayProcess(options["database"], url, burst=options["burst"])
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stderr.write(f"relay {relay.name} publishing to {redact(url)}")
        try:
            totals = relay.run()
        except BrokerUnavailable as error:
            raise CommandError(f"The broker stayed unreachable: {error}") from error
        self.stdout.write(
            f"sent {totals.sent}, retried {totals.retried}, dead letters {totals.dead}, "
            f"resent after an unsettled claim {totals.resent}"
        )
