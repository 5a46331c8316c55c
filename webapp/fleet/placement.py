"""Replica placement: which brokers hold each partition, as Apache Kafka assigns them.

This is Kafka's ``AdminUtils.assignReplicasToBrokers`` in Python, kept pure (no database)
so that it can be tested as a table of cases:

* Rack-unaware (some broker has no rack): partition ``p``'s first replica (its preferred
  leader) is broker ``(p + start_index) % n``; the other replicas follow at a shift that
  grows by one every ``n`` partitions, so that followers of consecutive rounds land on
  different brokers.
* Rack-aware (every broker has a rack): the same walk over a broker list that alternates
  racks, and a follower is skipped while a rack without a replica of the partition remains,
  so each partition spans as many racks as it can.

Either way no broker holds two replicas of one partition, which is why a replication
factor above the number of brokers is refused.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import zip_longest


@dataclass(frozen=True)
class PlacementBroker:
    """A broker as placement sees it."""

    node_id: int
    rack: str = ""


class PlacementError(Exception):
    """The partitions cannot be placed as asked. Not retriable: the request must change."""

    retriable = False


class ReplicationFactorTooLargeError(PlacementError):
    """More replicas per partition than brokers to put them on (the API answers 400)."""

    def __init__(self, replication_factor: int, available_brokers: int) -> None:
        self.replication_factor = replication_factor
        self.available_brokers = available_brokers
        super().__init__(f"replication factor {replication_factor} is larger than the number of available brokers ({available_brokers})")


class InvalidReplicationFactorError(PlacementError):
    """A replication factor below one."""

    def __init__(self, replication_factor: int) -> None:
        self.replication_factor = replication_factor
        super().__init__(f"replication factor must be at least 1, not {replication_factor}")


def rack_alternated(brokers: list[PlacementBroker]) -> list[PlacementBroker]:
    """Brokers ordered so that consecutive entries are on different racks where possible:
    the first broker of each rack (racks sorted by name), then the second of each, and so on."""
    by_rack: dict[str, list[PlacementBroker]] = {}
    for broker in sorted(brokers, key=lambda broker: broker.node_id):
        by_rack.setdefault(broker.rack, []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    return [broker for row in zip_longest(*columns) for broker in row if broker is not None]


def placement_order(brokers: list[PlacementBroker]) -> list[PlacementBroker]:
    """The order placement walks: rack-alternated when every broker has a rack, else by node id.

    ``start_index`` of ``assign_replicas`` is a position in this list.
    """
    if brokers and all(broker.rack for broker in brokers):
        return rack_alternated(brokers)
    return sorted(brokers, key=lambda broker: broker.node_id)


def _follower_index(first_replica_index: int, shift: int, replica_number: int, broker_count: int) -> int:
    # Kafka's replicaIndex: never lands on the first replica, since the step is 1..n-1.
    step = 1 + (shift + replica_number) % (broker_count - 1)
    return (first_replica_index + step) % broker_count


def assign_replicas(
    brokers: list[PlacementBroker],
    partition_count: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    start_index: int | None = None,
    replica_shift: int | None = None,
    chooser: random.Random | None = None,
) -> dict[int, list[int]]:
    """Replicas (broker node ids, preferred leader first) of partitions
    ``first_partition .. first_partition + partition_count - 1``.

    ``start_index`` and ``replica_shift`` default to random choices (as in Kafka, so that
    the leaders of many topics spread over the brokers); pass them to extend an existing
    topic consistently or to get a deterministic layout. ``chooser`` is the random source.
    """
    if replication_factor < 1:
        raise InvalidReplicationFactorError(replication_factor)
    if replication_factor > len(brokers):
        raise ReplicationFactorTooLargeError(replication_factor, len(brokers))
    if partition_count <= 0:
        return {}
    chooser = chooser or random.Random()
    rack_aware = all(broker.rack for broker in brokers)
    ordered = placement_order(brokers)
    count = len(ordered)
    start = start_index if start_index is not None else chooser.randrange(count)
    shift = replica_shift if replica_shift is not None else chooser.randrange(count)
    rack_count = len({broker.rack for broker in ordered})
    assignment: dict[int, list[int]] = {}
    for partition in range(first_partition, first_partition + partition_count):
        if partition > 0 and partition % count == 0:
            shift += 1
        first_index = (partition + start) % count
        if rack_aware:
            replicas = _rack_aware_replicas(ordered, first_index, shift, replication_factor, rack_count)
        else:
            replicas = [ordered[first_index]] + [ordered[_follower_index(first_index, shift, number, count)] for number in range(replication_factor - 1)]
        assignment[partition] = [broker.node_id for broker in replicas]
    return assignment


def _rack_aware_replicas(ordered: list[PlacementBroker], first_index: int, shift: int, replication_factor: int, rack_count: int) -> list[PlacementBroker]:
    count = len(ordered)
    leader = ordered[first_index]
    replicas = [leader]
    racks_used = {leader.rack}
    brokers_used = {leader.node_id}
    candidate_number = 0
    for _ in range(replication_factor - 1):
        # Bounded: within one full turn over the brokers a candidate always qualifies,
        # because replication_factor <= count guarantees an unused broker exists.
        for _ in range(count * count):
            candidate = ordered[_follower_index(first_index, shift * rack_count, candidate_number, count)]
            candidate_number += 1
            rack_fits = candidate.rack not in racks_used or len(racks_used) == rack_count
            broker_fits = candidate.node_id not in brokers_used or len(brokers_used) == count
            if rack_fits and broker_fits:
                replicas.append(candidate)
                racks_used.add(candidate.rack)
                brokers_used.add(candidate.node_id)
                break
    return replicas
