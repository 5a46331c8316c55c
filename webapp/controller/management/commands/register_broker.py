"""``manage.py register_broker --node-id N --host H --port P [--rack R] [--kafka-port K]`` (idempotent)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.controller.registration import BrokerRegistrationError, register_broker


class Command(BaseCommand):
    help = "Register a broker node with the control plane (or update its address); safe to repeat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--node-id", type=int, required=True)
        parser.add_argument("--host", required=True)
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--rack", default="")
        parser.add_argument("--kafka-port", type=int, default=0, help="the broker's Kafka-protocol listener on the same host (0: none)")

    def handle(self, *args: object, **options: object) -> None:
        try:
            registration = register_broker(options["node_id"], options["host"], options["port"], options["rack"], options["kafka_port"])  # type: ignore[arg-type]
        except BrokerRegistrationError as error:
            raise CommandError(str(error)) from None
        verb = "registered" if registration.created else ("updated" if registration.changed else "unchanged:")
        self.stdout.write(f"{verb} {registration.broker}")
