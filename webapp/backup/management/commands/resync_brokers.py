"""``manage.py resync_brokers [--broker HOST:PORT ...] [--delete-unknown-topics]``.

After ``manage.py restore``: raise snapshot versions, the controller epoch and leader epochs
above what the brokers hold, then push the restored credentials, ACLs, quotas and topics to
every broker that answers, and check that each applied them (``webapp.backup.broker_resync``).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.backup.broker_resync import resync_brokers
from webapp.backup.errors import ResyncRefusedError


class Command(BaseCommand):
    help = "Push the restored control-plane state to the brokers, above every version they have seen."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--broker", action="append", default=[], metavar="HOST:PORT", help="a broker to include besides the registered ones (repeatable)")
        parser.add_argument(
            "--delete-unknown-topics", action="store_true", help="push even though brokers host topics the restored catalog lacks (they are deleted)"
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            result = resync_brokers(list(options["broker"]), delete_unknown_topics=bool(options["delete_unknown_topics"]))  # type: ignore[call-overload]
        except ResyncRefusedError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(result.summary())
        if result.failures:
            raise CommandError(f"{len(result.failures)} broker(s) did not apply the restored state; run resync_brokers again once they answer")
