"""A tenant's ElectLeaders forwarded to the controller (``election_requests``), against the test
database: preferred and unclean elections with Kafka's per-partition codes, tenant isolation,
the unclean.leader.election.enable gate, and the pure per-partition rule."""

from __future__ import annotations

import pytest

from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from tests.webapp.fleet.controller.harness import ControllerHarness, placement
from webapp.accounts.models import ServiceAccount, Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller.election import NO_LEADER, PartitionState, requested_election
from webapp.controller.election_requests import PREFERRED, UNCLEAN
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db


def _caller(harness: ControllerHarness) -> controller_pb2.ForwardedCaller:
    account, _ = ServiceAccount.objects.get_or_create(tenant=harness.tenant, name="ops")
    return controller_pb2.ForwardedCaller(tenant_id=harness.tenant.public_id, principal=account.principal)


def _elect(harness: ControllerHarness, election_type: int, *partitions: tuple[str, int], caller: controller_pb2.ForwardedCaller | None = None):  # type: ignore[no-untyped-def]
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    request = broker_pb2.ElectLeadersRequest(
        election_type=election_type,
        all_partitions=not partitions,
        partitions=[broker_pb2.TopicPartitions(topic=topic, partitions=indexes) for topic, indexes in by_topic.items()],
    )
    forwarded = controller_pb2.ForwardedElectLeadersRequest(caller=caller or _caller(harness), request=request)
    return harness.service.elect_leaders(forwarded)


def _codes(response: broker_pb2.ElectLeadersResponse) -> list[tuple[str, int, int]]:
    return [(result.topic, result.partition, result.error_code) for result in response.results]


def test_preferred_election_answers_each_partition_with_kafkas_code_and_pushes_once() -> None:
    harness = ControllerHarness()
    moved, led, unknown_index = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=2, partitions=3)
    Partition.objects.filter(pk=led.pk).update(leader=1)
    [out_of_isr] = harness.topic("payments", replicas=[3, 1], isr=[1], leader=1)
    response = _elect(harness, PREFERRED, ("orders", 0), ("orders", 1), ("payments", 0), ("orders", 7), ("orders", 0))
    assert response.error_code == 0
    assert _codes(response) == [
        ("orders", 0, ErrorCode.NO_ERROR),
        ("orders", 1, ErrorCode.ELECTION_NOT_NEEDED),
        ("orders", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("payments", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
    ]
    assert placement(moved) == (1, 4, [1, 2, 3])
    assert placement(out_of_isr)[0] == 1 and placement(unknown_index)[0] == 2
    assert harness.pushes == 1


def test_all_partitions_leaves_out_those_that_need_no_election() -> None:
    harness = ControllerHarness()
    harness.topic("orders", replicas=[1, 2], isr=[1, 2], leader=1, partitions=2)
    [moved] = harness.topic("payments", replicas=[1, 2], isr=[1, 2], leader=2)
    assert _codes(_elect(harness, PREFERRED)) == [("payments", 0, ErrorCode.NO_ERROR)]
    assert placement(moved)[0] == 1
    assert _codes(_elect(harness, PREFERRED)) == []
    assert harness.pushes == 1


def test_another_tenants_topic_is_unknown_and_untouched() -> None:
    harness = ControllerHarness()
    other = Tenant.objects.create(name="Globex", slug="globex")
    topic = Topic.objects.create(tenant=other, name="orders", partition_count=1, replication_factor=2)
    theirs = Partition.objects.create(topic=topic, index=0, replicas=[1, 2], isr=[1, 2], leader=2, leader_epoch=3)
    response = _elect(harness, PREFERRED, ("orders", 0))
    assert _codes(response) == [("orders", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert _codes(_elect(harness, PREFERRED)) == []  # "every partition" is the caller's own only
    assert placement(theirs) == (2, 3, [1, 2]) and harness.pushes == 0


def test_unclean_election_needs_the_topics_permission() -> None:
    harness = ControllerHarness()
    [strict] = harness.topic("strict", replicas=[1, 2], isr=[1], leader=NO_LEADER)
    [lenient] = harness.topic("lenient", replicas=[1, 2], isr=[1], leader=NO_LEADER)
    [clean] = harness.topic("clean", replicas=[1, 3], isr=[1, 3], leader=NO_LEADER)
    [led] = harness.topic("led", replicas=[2, 3], isr=[2, 3], leader=2)
    Topic.objects.filter(name="lenient").update(configs={"unclean.leader.election.enable": "true"})
    harness.only_alive(2, 3)
    response = _elect(harness, UNCLEAN, ("strict", 0), ("lenient", 0), ("clean", 0), ("led", 0))
    assert _codes(response) == [
        ("strict", 0, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE),
        ("lenient", 0, ErrorCode.NO_ERROR),
        ("clean", 0, ErrorCode.NO_ERROR),
        ("led", 0, ErrorCode.ELECTION_NOT_NEEDED),
    ]
    assert "unclean.leader.election.enable" in response.results[0].error_message
    assert placement(strict)[0::2] == (NO_LEADER, [1])
    assert placement(lenient)[0::2] == (2, [2])  # only the new leader is in sync
    assert placement(clean)[0::2] == (3, [3])  # a live ISR member (broker 1's fencing left the ISR): a clean election
    assert placement(led)[0] == 2


def test_callers_that_cannot_act_are_refused_as_a_whole() -> None:
    harness = ControllerHarness()
    [partition] = harness.topic("orders", replicas=[1, 2], isr=[1, 2], leader=2)
    stranger = controller_pb2.ForwardedCaller(tenant_id=harness.tenant.public_id, principal="User:sa-nobody")
    response = _elect(harness, PREFERRED, ("orders", 0), caller=stranger)
    assert response.error_code == ErrorCode.INVALID_REQUEST and _codes(response) == [("orders", 0, ErrorCode.INVALID_REQUEST)]
    assert _elect(harness, 7, ("orders", 0)).error_code == ErrorCode.INVALID_REQUEST
    assert placement(partition)[0] == 2


@pytest.mark.parametrize(
    ("state", "live", "unclean", "allowed", "expected"),
    [
        (PartitionState((1, 2), (1, 2), 1, 5), {1, 2}, False, False, ErrorCode.ELECTION_NOT_NEEDED),
        (PartitionState((1, 2), (2,), 2, 5), {1, 2}, False, False, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
        (PartitionState((1, 2), (1, 2), 2, 5), {2}, False, False, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
        (PartitionState((1, 2), (1,), NO_LEADER, 5), {2}, True, True, ErrorCode.NO_ERROR),
        (PartitionState((1, 2), (1,), NO_LEADER, 5), set(), True, True, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE),
        (PartitionState((1, 2), (1, 2), 1, 5), {2}, True, False, ErrorCode.NO_ERROR),  # its leader died unnoticed: a clean election
    ],
)
def test_requested_election_rule(state: PartitionState, live: set[int], unclean: bool, allowed: bool, expected: int) -> None:
    decision = requested_election(state, live, unclean=unclean, unclean_allowed=allowed)
    assert decision.error_code == expected
    assert (decision.state is not None) == (expected == ErrorCode.NO_ERROR)
    if decision.state is not None:
        assert decision.state.leader_epoch == state.leader_epoch + 1 and decision.state.leader in live
