"""A controller against the test database, with a manual clock and counted pushes.

Brokers 1, 2 and 3 are registered. The internal topics their registrations create are removed
again, so that each test sees only the tenant topics it makes itself.
"""

from __future__ import annotations

from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller.service import ControllerService


class ManualMonotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ControllerHarness:
    """Precondition: a test with database access."""

    def __init__(self, *, controller_epoch: int | None = None) -> None:
        self.clock = ManualMonotonic()
        self.pushes = 0
        self.service = ControllerService(session_timeout_ms=9000, monotonic=self.clock, first_epoch=1, controller_epoch=controller_epoch, push=self._push)
        self.tenant = Tenant.objects.create(name="Acme", slug="acme")
        self.epochs = {node_id: self.service.register(node_id, "127.0.0.1", 9000 + node_id, "").broker_epoch for node_id in (1, 2, 3)}
        self.forget_internal_topics()
        self.pushes = 0

    def register_again(self, node_id: int) -> int:
        """A new session for ``node_id``; the internal topics it creates are removed again."""
        self.epochs[node_id] = self.service.register(node_id, "127.0.0.1", 9000 + node_id, "").broker_epoch
        self.forget_internal_topics()
        return self.epochs[node_id]

    @staticmethod
    def forget_internal_topics() -> None:
        Topic.objects.filter(tenant__isnull=True).delete()

    def _push(self) -> None:
        self.pushes += 1

    def topic(self, name: str, *, replicas: list[int], isr: list[int], leader: int, leader_epoch: int = 3, partitions: int = 1) -> list[Partition]:
        """A topic whose partitions all have this placement."""
        topic = Topic.objects.create(tenant=self.tenant, name=name, partition_count=partitions, replication_factor=len(replicas))
        return [
            Partition.objects.create(topic=topic, index=index, replicas=replicas, isr=isr, leader=leader, leader_epoch=leader_epoch)
            for index in range(partitions)
        ]

    def qualified(self, name: str) -> str:
        return f"{self.tenant.public_id}~{name}"

    def only_alive(self, *node_ids: int) -> list[int]:
        """Let the sessions of the other brokers expire, then check sessions (the fenced ids)."""
        for _ in range(2):
            self.clock.now += 5.0
            for node_id in node_ids:
                assert self.service.heartbeat(node_id, self.epochs[node_id])
        return self.service.check_sessions()


def placement(partition: Partition) -> tuple[int, int, list[int]]:
    """(leader, leader epoch, ISR) as stored now."""
    partition.refresh_from_db()
    return partition.leader, partition.leader_epoch, partition.isr
