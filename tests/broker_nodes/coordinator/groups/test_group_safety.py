"""Property: whatever members do (join, leave, lag in revoking, lose answers, time out), no partition ever has two owners.

Clients are modelled as KIP-848 clients behave: a client takes a newly assigned partition at
once, keeps a revoked one until it decides to let it go (then reports ``owned`` without it),
sometimes reports nothing, sometimes loses an answer (and then reports ``owned`` with its
previous epoch), and gives up everything when its heartbeat is refused or its session lapses.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker_nodes.coordinator.groups.errors import GroupError
from broker_nodes.coordinator.groups.group import GroupSettings, Heartbeat, Subscription, owners
from broker_nodes.coordinator.groups.member import TopicPartition
from tests.broker_nodes.coordinator.groups.groups_support import GroupHarness

TOPICS = ("a", "b")
MAX_CLIENTS = 5


@dataclass
class Client:
    member_id: str
    epoch: int
    topics: tuple[str, ...]
    owned: frozenset[TopicPartition]  # what the application processes
    target: frozenset[TopicPartition]  # the last assignment it was told
    report_next: bool = False  # after a lost answer it must say what it owns


class GroupSafety(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.harness = GroupHarness(settings=GroupSettings(session_timeout_ms=10_000, heartbeat_interval_ms=1_000))
        self.harness.add_topic("a", 5)
        self.harness.add_topic("b", 3)
        self.clients: dict[str, Client] = {}
        self.gone: list[Client] = []

    @precondition(lambda self: len(self.clients) < MAX_CLIENTS)
    @rule(topics=st.sampled_from([("a",), ("b",), ("a", "b")]), assignor=st.sampled_from(["", "range", "roundrobin", "sticky"]))
    def join(self, topics: tuple[str, ...], assignor: str) -> None:
        self._join("", topics, assignor)

    @precondition(lambda self: bool(self.gone) and len(self.clients) < MAX_CLIENTS)
    @rule(index=st.integers(0, 20))
    def rejoin(self, index: int) -> None:
        client = self.gone.pop(index % len(self.gone))
        self._join(client.member_id, client.topics, "")

    def _join(self, member_id: str, topics: tuple[str, ...], assignor: str) -> None:
        answer = self.harness.join(*topics, member_id=member_id, assignor=assignor)
        assert answer.assignment is not None
        self.clients[answer.member_id] = Client(answer.member_id, answer.member_epoch, topics, answer.assignment, answer.assignment)

    @precondition(lambda self: bool(self.clients))
    @rule(
        index=st.integers(0, 20),
        revoke=st.booleans(),
        report=st.booleans(),
        lose_answer=st.booleans(),
        change_topics=st.sampled_from([None, ("a",), ("a", "b")]),
    )
    def heartbeat(self, index: int, revoke: bool, report: bool, lose_answer: bool, change_topics: tuple[str, ...] | None) -> None:
        client = self.clients[sorted(self.clients)[index % len(self.clients)]]
        if revoke:
            client.owned = client.owned & client.target
        subscription = Subscription(change_topics, "") if change_topics is not None else None
        owned = client.owned if report or client.report_next else None
        try:
            answer = self.harness.heartbeat(Heartbeat(client.member_id, client.epoch, subscription=subscription, owned=owned))
        except GroupError:
            self._lose(client)
            return
        if change_topics is not None:
            client.topics = change_topics
        if lose_answer:
            client.report_next = True
            return
        client.report_next = False
        client.epoch = answer.member_epoch
        if answer.assignment is not None:
            client.target = answer.assignment
        client.owned = client.owned | client.target

    @precondition(lambda self: bool(self.clients))
    @rule(index=st.integers(0, 20))
    def leave(self, index: int) -> None:
        client = self.clients[sorted(self.clients)[index % len(self.clients)]]
        try:
            self.harness.heartbeat(Heartbeat(client.member_id, -1))
        except GroupError:
            pass
        self._lose(client)

    @rule(advance=st.sampled_from([1_000, 5_000, 10_000]))
    def time_passes(self, advance: int) -> None:
        for member_id in self.harness.expire(advance):
            if member_id in self.clients:
                # Its session lapsed: a real client has stopped heartbeating for as long and gives its partitions up.
                self._lose(self.clients[member_id])

    def _lose(self, client: Client) -> None:
        client.owned = frozenset()
        client.target = frozenset()
        self.clients.pop(client.member_id, None)
        self.gone.append(client)

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        seen: dict[TopicPartition, str] = {}
        for client in self.clients.values():
            for topic_partition in client.owned:
                assert topic_partition not in seen, f"{topic_partition} owned by {seen[topic_partition]} and {client.member_id}"
                seen[topic_partition] = client.member_id
        assert all(len(members) == 1 for members in owners(self.harness.group.members).values())

    @invariant()
    def clients_own_no_more_than_the_coordinator_counts_them_owning(self) -> None:
        for client in self.clients.values():
            member = self.harness.group.members.get(client.member_id)
            assert member is not None and client.owned <= member.owned

    @invariant()
    def member_epochs_never_pass_the_assignment_epoch(self) -> None:
        group = self.harness.group
        assert all(member.member_epoch <= group.assignment_epoch for member in group.members.values())


GroupSafety.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
test_no_partition_ever_has_two_owners = GroupSafety.TestCase


def test_a_group_of_members_that_keep_heartbeating_settles_with_every_partition_owned() -> None:
    harness = GroupHarness()
    harness.add_topic("a", 5)
    harness.add_topic("b", 3)
    clients = {}
    for topics in (("a",), ("a", "b"), ("b",), ("a", "b")):
        answer = harness.join(*topics)
        clients[answer.member_id] = answer
    owned = {member_id: answer.assignment or frozenset() for member_id, answer in clients.items()}
    for _ in range(6):  # bounded: each round every member revokes what it must and reports it
        for member_id, answer in list(clients.items()):
            current = harness.group.members[member_id]
            answer = harness.beat(answer, owned=owned[member_id] & current.assigned)
            owned[member_id] = answer.assignment if answer.assignment is not None else owned[member_id]
            clients[member_id] = answer
    assert harness.group.state.value == "Stable"
    every = {("a", number) for number in range(5)} | {("b", number) for number in range(3)}
    assert set().union(*owned.values()) == every
