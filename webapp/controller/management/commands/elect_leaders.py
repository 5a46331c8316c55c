"""``python manage.py elect_leaders [--topic TENANT_ID:NAME]``: the preferred-leader election, now.

Kafka's ``kafka-leader-election --election-type preferred``: every partition (or every
partition of one topic) whose preferred replica (the first) is online and in the ISR but does
not lead gets it back as leader, with a higher leader epoch, whatever the imbalance
percentage the controller's periodic election waits for. Prints one line per move and pushes
the new cluster map to the brokers.

The command runs beside the active controller, not through it: it takes the brokers the
database knows as ONLINE as the live ones, and locks the controller epoch row so that its
transaction never interleaves with the controller's.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from log_formats.topic_names import is_internal_topic_name, qualify
from webapp.controller.actions import UnknownTopicError, elect_preferred_leaders
from webapp.controller.service import push_partitions
from webapp.fleet.facade import BrokerNode, BrokerState

# The map this command pushes is not a controller's: brokers treat epoch 0 like a provisioning push.
NOT_A_CONTROLLER_EPOCH = 0


def qualified_topic(argument: str) -> str:
    """``TENANT_ID:NAME`` (or an internal topic's plain name) as brokers name the topic."""
    tenant_id, separator, name = argument.partition(":")
    if separator and tenant_id and name:
        return qualify(tenant_id, name)
    if not separator and is_internal_topic_name(argument):
        return argument
    raise CommandError(f"--topic must be TENANT_ID:NAME (or an internal topic such as __consumer_offsets), not {argument!r}")


class Command(BaseCommand):
    help = "Move leadership back to each partition's preferred replica where it is online and in the ISR."

    def add_arguments(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument("--topic", help="only this topic: TENANT_ID:NAME, or an internal topic's name")

    def handle(self, *args: object, **options: object) -> None:
        topic = qualified_topic(str(options["topic"])) if options.get("topic") else None
        online = set(BrokerNode.objects.filter(state=BrokerState.ONLINE).values_list("node_id", flat=True))
        try:
            moves = elect_preferred_leaders(online, controller_epoch=None, topic=topic)
        except UnknownTopicError as error:
            raise CommandError(str(error)) from None
        for move in moves:
            self.stdout.write(f"{move.topic} partition {move.partition}: leader {move.previous_leader} -> {move.leader} (leader epoch {move.leader_epoch})")
        if not moves:
            self.stdout.write("every partition is led by its preferred replica, or that replica is offline or out of the ISR")
            return
        push_partitions(NOT_A_CONTROLLER_EPOCH)
        self.stdout.write(f"{len(moves)} partition(s) moved; cluster map pushed to the brokers")
