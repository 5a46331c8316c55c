"""Classic groups in __consumer_offsets: Kafka's GroupMetadata record, and a new coordinator carrying the group on.

A standalone broker (manual clock) provides the log; each "coordinator" is an OffsetStore and a
GroupCoordinator over it, given a leadership of the group's offsets partition, as after a failover.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import Executor, Future

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.groups import classic_records
from broker_nodes.coordinator.groups.classic import ClassicGroup, ClassicSettings, ClassicState, JoinAnswer, JoinRequest, SyncAnswer
from broker_nodes.coordinator.groups.classic_records import StoredClassicGroup, StoredMember
from broker_nodes.coordinator.groups.coordinator import GroupCoordinator
from broker_nodes.coordinator.groups.errors import UnknownMemberIdError
from broker_nodes.coordinator.groups.group import GroupSettings
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC, OffsetCommitEntry, OffsetStore
from broker_nodes.server.broker import Broker
from log_formats.offset_commit_records import decode_key, key_version
from weir.records import iter_records

GROUP = "tn-a~billing"
SESSION_MS = 10_000
GENERATION = 2  # of the group stable_group_of_two makes


class ManualExecutor(Executor):
    """Queues submitted loads; ``run_all`` runs them in the test's thread."""

    def __init__(self) -> None:
        self.queued: list[tuple[Callable[..., object], tuple[object, ...]]] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.queued.append((fn, args))
        return Future()

    def run_all(self) -> None:
        queued, self.queued = self.queued, []
        for fn, args in queued:
            fn(*args)


@pytest.fixture
def broker(tmp_path):
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=2"]), clock=ManualClock())
    broker.start()
    broker.topic_admin.create_topic("orders", 1, 1, {})
    yield broker
    broker.shutdown()


class Coordinator:
    """One leadership of the group's offsets partition: its store, loaded, and a group coordinator over it."""

    def __init__(self, broker: Broker, epoch: int) -> None:
        self.loader = ManualExecutor()
        self.store = OffsetStore(broker.replica_manager, broker.registry, broker.clock, metadata_max_bytes=4096, commit_timeout_ms=1000, loader=self.loader)
        self.store.follow_leadership({self.store.partition_for(GROUP): epoch})
        self.loader.run_all()
        ids = itertools.count(1)
        self.groups = GroupCoordinator(
            self.store,
            broker.registry,
            broker.clock,
            GroupSettings(),
            classic_settings=ClassicSettings(initial_rebalance_delay_ms=0),
            classic_member_ids=lambda client_id: f"{client_id}-{epoch}-{next(ids)}",
        )
        self.classic = self.groups.classic

    def join(self, member_id: str = "", client_id: str = "app", protocols=(("range", b"sub"), ("roundrobin", b"rr"))):  # type: ignore[no-untyped-def]
        request = JoinRequest(member_id, "consumer", tuple(protocols), SESSION_MS, 30_000, client_id=client_id, client_host="/127.0.0.1")
        return self.classic.join(GROUP, request)


def stable_group_of_two(first: Coordinator) -> tuple[JoinAnswer, JoinAnswer]:
    """A member alone in generation 1, then a second one: both synced in generation 2 (GENERATION)."""
    alone = first.join(client_id="a").wait(0)
    assert isinstance(alone, JoinAnswer) and alone.generation == 1
    first.classic.sync(GROUP, alone.member_id, "", 1, "consumer", "range", {alone.member_id: b"orders-0,1"})
    joining = first.join(client_id="b")
    leader, follower = first.join(alone.member_id, client_id="a").wait(0), joining.wait(0)
    assert isinstance(leader, JoinAnswer) and isinstance(follower, JoinAnswer) and leader.leader == leader.member_id
    assignments = {leader.member_id: b"orders-0", follower.member_id: b"orders-1"}
    waiting = first.classic.sync(GROUP, follower.member_id, "", GENERATION, "consumer", "range", {})
    synced = first.classic.sync(GROUP, leader.member_id, "", GENERATION, "consumer", "range", assignments)
    assert synced.wait(0) == SyncAnswer("consumer", "range", b"orders-0")
    assert waiting.wait(0) == SyncAnswer("consumer", "range", b"orders-1")
    return leader, follower


def classic_records_in_log(broker: Broker) -> list[tuple[str, StoredClassicGroup | None]]:
    log = broker.replica_manager.partition_log(OFFSETS_TOPIC, broker.offset_store.partition_for(GROUP))
    data = bytes(log.read(0, 1 << 20, max_offset=log.log_end_offset).records)
    found = []
    for record in iter_records(data):
        if record.key is not None and key_version(bytes(record.key)) == 2:
            found.append((classic_records.decode_key(bytes(record.key)), None if record.value is None else classic_records.decode_value(bytes(record.value))))
    return found


# ---------------------------------------------------------------------- the record


STORED = StoredClassicGroup(
    "consumer",
    4,
    "range",
    "a-1",
    (StoredMember("a-1", "", "a", "/10.0.0.1", 30_000, 10_000, b"sub", b"asg"), StoredMember("b-2", "static-b", "b", "/10.0.0.2", 5_000, 6_000, b"", b"")),
)


def test_the_value_round_trips_in_kafkas_version_3_layout() -> None:
    value = classic_records.encode_value(STORED, 1_700_000_000_000)
    assert classic_records.decode_value(value) == STORED
    # int16 version, string protocolType, int32 generation, string protocol, string leader, int64 timestamp, int32 member count.
    assert value[:36] == b"\x00\x03" + b"\x00\x08consumer" + b"\x00\x00\x00\x04" + b"\x00\x05range" + b"\x00\x03a-1" + (1_700_000_000_000).to_bytes(8, "big")
    assert value[36:40] == b"\x00\x00\x00\x02"
    key = classic_records.encode_key(GROUP)
    assert key == b"\x00\x02\x00\x0c" + GROUP.encode() and classic_records.decode_key(key) == GROUP
    assert decode_key(key) is None  # readers of offset commits skip it, as they skip Kafka's


def test_a_version_0_value_of_an_older_kafka_is_read_with_the_session_timeout_as_rebalance_timeout() -> None:
    def string(text: str) -> bytes:
        return len(text).to_bytes(2, "big") + text.encode()

    member = string("m-1") + string("client") + string("/h") + (7_000).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"sub" + (1).to_bytes(4, "big") + b"a"
    value = b"\x00\x00" + string("consumer") + (2).to_bytes(4, "big") + string("range") + string("m-1") + (1).to_bytes(4, "big") + member
    assert classic_records.decode_value(value) == StoredClassicGroup(
        "consumer", 2, "range", "m-1", (StoredMember("m-1", "", "client", "/h", 7_000, 7_000, b"sub", b"a"),)
    )


def test_bad_bytes_are_a_clear_error() -> None:
    with pytest.raises(classic_records.ClassicRecordError, match="unknown classic group value version 9"):
        classic_records.decode_value(b"\x00\x09")
    with pytest.raises(classic_records.ClassicRecordError, match="record ends after"):
        classic_records.decode_value(classic_records.encode_value(STORED, 0)[:-3])


def test_a_stable_group_is_stored_with_its_members_and_an_emptied_one_without() -> None:
    assert classic_records.stored_form(ClassicGroup(GROUP)) is None  # never had a generation: no record
    emptied = ClassicGroup(GROUP, generation=3, protocol_type="consumer")
    assert classic_records.stored_form(emptied) == StoredClassicGroup("consumer", 3, "", "", ())
    with pytest.raises(LookupError):
        classic_records.stored_form(ClassicGroup(GROUP, state=ClassicState.PREPARING_REBALANCE, members={"m": None}))  # type: ignore[dict-item]
    restored = classic_records.restore(GROUP, STORED, "home", now_ms=1_000)
    assert (restored.state, restored.generation, restored.leader, restored.protocol_name) == (ClassicState.STABLE, 4, "a-1", "range")
    assert restored.members["a-1"].protocols == (("range", b"sub"),) and restored.members["a-1"].session_deadline_ms == 11_000
    assert classic_records.stored_form(restored) == STORED == restored.persisted


# ---------------------------------------------------------------------- the coordinator


def test_a_new_coordinator_carries_the_classic_group_on_in_its_generation(broker, coordinators) -> None:
    first = coordinators(1)
    leader, follower = stable_group_of_two(first)
    written = classic_records_in_log(broker)  # one record per generation, written when its leader synced
    assert [stored.generation for _, stored in written if stored] == [1, GENERATION]
    group_id, stored = written[-1]
    assert group_id == GROUP and stored is not None and {member.assignment for member in stored.members} == {b"orders-0", b"orders-1"}

    second = coordinators(2)  # the next leadership loads the log
    second.classic.heartbeat(GROUP, follower.member_id, "", GENERATION)  # no UNKNOWN_MEMBER_ID, no rebalance
    assert second.classic.sync(GROUP, follower.member_id, "", GENERATION, "consumer", "range", {}).wait(0) == SyncAnswer("consumer", "range", b"orders-1")
    snapshot = second.groups.describe(GROUP)
    assert (snapshot.state, snapshot.group_epoch, snapshot.assignor_name) == (ClassicState.STABLE, GENERATION, "range")
    assert sorted(member.member_id for member in snapshot.members) == sorted([leader.member_id, follower.member_id])
    commit = [OffsetCommitEntry("orders", 0, 5, -1, "")]
    assert second.groups.commit_offsets(GROUP, leader.member_id, GENERATION, commit) == [None]  # commits with the generation are accepted
    assert len(classic_records_in_log(broker)) == len(written)  # nothing changed: nothing written


def test_members_that_stay_away_expire_and_the_last_one_leaving_empties_the_group(broker, coordinators) -> None:
    first = coordinators(1)
    leader, follower = stable_group_of_two(first)
    second = coordinators(2)
    assert [entry.group_id for entry in second.classic.listed(second.store.coordinating(GROUP))] == [GROUP]  # listed once loaded
    broker.clock.advance(SESSION_MS // 2)
    second.classic.heartbeat(GROUP, leader.member_id, "", GENERATION)
    broker.clock.advance(SESSION_MS // 2 + 1)
    assert second.classic.expire() == 1  # the follower never came to the new coordinator
    rejoined = second.join(leader.member_id).wait(0)
    assert isinstance(rejoined, JoinAnswer) and rejoined.generation == GENERATION + 1
    second.classic.sync(GROUP, leader.member_id, "", GENERATION + 1, "consumer", "range", {leader.member_id: b"orders-0,1"})
    assert [stored.generation for _, stored in classic_records_in_log(broker) if stored] == [1, GENERATION, GENERATION + 1]
    assert second.classic.leave(GROUP, [(leader.member_id, "")]) == [None]
    # Kafka's emptied group: generation bumped, protocol type kept, no protocol, leader nor members; not a tombstone.
    assert classic_records_in_log(broker)[-1] == (GROUP, StoredClassicGroup("consumer", GENERATION + 2, "", "", ()))
    assert second.groups.commit_offsets(GROUP, "", -1, [OffsetCommitEntry("orders", 0, 3, -1, "")]) == [None]
    tombstones = len(classic_records_in_log(broker))
    second.groups.delete_group(GROUP)  # DeleteGroups tombstones the classic record again, as Kafka's deletion does
    assert classic_records_in_log(broker)[tombstones:] == [(GROUP, None)]

    third = coordinators(3)
    with pytest.raises(UnknownMemberIdError):
        third.classic.heartbeat(GROUP, leader.member_id, "", GENERATION + 1)
    assert third.classic.describe(GROUP) is None
