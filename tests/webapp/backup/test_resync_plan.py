"""Planning a resync: everything goes above what brokers have seen; unknown topics are named."""

from __future__ import annotations

from webapp.backup.resync_plan import BrokerReport, CatalogState, HostedReplica, PartitionLeadership, plan_resync

ORDERS = "11111111-1111-1111-1111-111111111111"
LATE = "22222222-2222-2222-2222-222222222222"


def replica(topic_id: str, partition: int, *, leader: bool, epoch: int, isr: tuple[int, ...] = (), topic: str = "orders") -> HostedReplica:
    return HostedReplica("tn-abc", topic, topic_id, partition, leader, epoch, isr)


def broker(node_id: int, *hosted: HostedReplica, partitions: int = 0, security: int = 0, controller: int = 0) -> BrokerReport:
    return BrokerReport(node_id, f"b{node_id}:9092", partitions, security, controller, hosted)


def catalog(*, partitions: int = 5, security: int = 7, controller: int = 3) -> CatalogState:
    return CatalogState(
        versions={"partitions": partitions, "security": security},
        controller_epoch=controller,
        partitions={(ORDERS, 0): PartitionLeadership(1, 4, (1, 2)), (ORDERS, 1): PartitionLeadership(2, 4, (2, 1))},
    )


def test_versions_go_one_above_the_highest_of_the_database_and_every_broker() -> None:
    plan = plan_resync(catalog(partitions=5, security=7), [broker(1, partitions=9, security=6), broker(2, partitions=8, security=11)])
    assert plan.versions == {"partitions": 10, "security": 12}
    # Brokers behind the restored database: one above the database.
    assert plan_resync(catalog(partitions=5, security=7), [broker(1, partitions=2, security=2)]).versions == {"partitions": 6, "security": 8}


def test_the_controller_epoch_becomes_the_highest_seen() -> None:
    assert plan_resync(catalog(controller=3), [broker(1, controller=9), broker(2, controller=4)]).controller_epoch == 9
    assert plan_resync(catalog(controller=3), [broker(1, controller=2)]).controller_epoch == 3


def test_leadership_comes_from_the_broker_leading_at_the_newest_epoch() -> None:
    plan = plan_resync(
        catalog(),
        [
            broker(1, replica(ORDERS, 0, leader=False, epoch=6), replica(ORDERS, 1, leader=False, epoch=4)),
            broker(2, replica(ORDERS, 0, leader=True, epoch=6, isr=(2, 1)), replica(ORDERS, 1, leader=True, epoch=4, isr=(2, 1))),
        ],
    )
    # Partition 0 moved to broker 2 after the backup; partition 1 did not change.
    assert plan.leadership == {(ORDERS, 0): PartitionLeadership(2, 6, (2, 1))}


def test_without_a_reachable_leader_the_epoch_rises_and_the_restored_leader_stays() -> None:
    plan = plan_resync(catalog(), [broker(2, replica(ORDERS, 0, leader=False, epoch=8))])
    assert plan.leadership == {(ORDERS, 0): PartitionLeadership(1, 8, (1, 2))}


def test_a_stale_leader_claim_does_not_win_over_a_newer_epoch() -> None:
    plan = plan_resync(catalog(), [broker(1, replica(ORDERS, 0, leader=True, epoch=5, isr=(1,))), broker(2, replica(ORDERS, 0, leader=False, epoch=7))])
    assert plan.leadership == {(ORDERS, 0): PartitionLeadership(1, 7, (1, 2))}


def test_topics_and_partitions_the_catalog_lacks_are_named() -> None:
    plan = plan_resync(
        catalog(),
        [
            broker(1, replica(LATE, 0, leader=True, epoch=0, topic="late"), replica(ORDERS, 2, leader=True, epoch=0)),
            broker(2, replica(LATE, 0, leader=False, epoch=0, topic="late"), replica(LATE, 1, leader=True, epoch=0, topic="late")),
            BrokerReport(3, "b3:9092", 0, 0, 0, (HostedReplica("", "__usage", "33333333-3333-3333-3333-333333333333", 0, True, 0, (3,)),)),
        ],
    )
    assert plan.unknown == (
        "topic __usage (id 33333333-3333-3333-3333-333333333333): partition(s) 0 on broker(s) 3",
        f"topic tn-abc/late (id {LATE}): partition(s) 0, 1 on broker(s) 1, 2",
        f"partitions of topic tn-abc/orders (id {ORDERS}): partition(s) 2 on broker(s) 1",
    )
    assert plan_resync(catalog(), [broker(1, replica(ORDERS, 0, leader=True, epoch=4))]).unknown == ()
