"""The checks of the group proofs on hand-written event logs: each finds the violation it is
for and accepts the legitimate histories next to it (handovers, a killed member's partitions
moving once the coordinator removed it, a thawed member's zombie batch)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.cluster.group_workload import (
    Departure,
    Fault,
    MemberRecord,
    Snapshot,
    all_holds,
    build_holds,
    check_committed_never_backwards,
    check_every_record_processed,
    check_processing_within_holds,
    check_single_holder,
    check_snapshots_single_owner,
    coordinator_removals,
    poll_interval_departures,
)


def assign(t: float, member: str, *partitions: int) -> dict[str, Any]:
    return {"e": "assign", "t": t, "t_exit": t + 0.001, "member": member, "partitions": list(partitions)}


def revoke(t: float, member: str, *partitions: int, kind: str = "revoke") -> dict[str, Any]:
    return {"e": kind, "t": t, "t_exit": t + 0.01, "member": member, "partitions": list(partitions)}


def processed(t: float, member: str, partition: int, *offsets: int) -> dict[str, Any]:
    return {"e": "processed", "t": t, "member": member, "p": partition, "r": [[offset, f"v{partition}-{offset}"] for offset in offsets]}


def commit(t_sent: float, t: float, partition: int, offset: int, error: str | None = None) -> dict[str, Any]:
    return {
        "e": "commit",
        "t_sent": t_sent,
        "t": t,
        "member": "x",
        "offsets": {str(partition): offset},
        "errors": {str(partition): error} if error else {},
        "failure": None,
    }


def test_a_handover_after_the_revocation_is_one_holder_at_a_time() -> None:
    first = MemberRecord("a", [assign(1.0, "A", 0), processed(2.0, "A", 0, 0, 1), commit(2.0, 2.1, 0, 2), revoke(3.0, "A", 0)])
    second = MemberRecord("b", [assign(3.5, "B", 0), processed(4.0, "B", 0, 2)])
    holds, problems = all_holds([first, second], [Departure(9.0, "B", "removed")])
    assert problems == []
    assert check_single_holder(holds) == []
    assert check_processing_within_holds([first, second], holds).problems == []


def test_a_partition_given_out_before_its_previous_holder_revoked_is_held_twice() -> None:
    first = MemberRecord("a", [assign(1.0, "A", 0), revoke(3.0, "A", 0)])
    second = MemberRecord("b", [assign(2.9, "B", 0), revoke(5.0, "B", 0)])
    holds, _ = all_holds([first, second], [])
    [problem] = check_single_holder(holds)
    assert problem.startswith("partition 0 held by two processes: a (member A)")


def test_a_killed_members_partitions_are_held_until_the_coordinator_removes_it() -> None:
    killed = MemberRecord("a", [assign(1.0, "A", 0, 1)], [Fault("kill", 2.0)])
    early = MemberRecord("b", [assign(4.0, "B", 0), revoke(9.0, "B", 0)])  # before the removal: a violation
    late = MemberRecord("c", [assign(6.5, "C", 1), revoke(9.0, "C", 1)])  # after it: a handover
    removal = Departure(6.0, "A", "removed by the coordinator: no heartbeat within its session timeout")
    holds, problems = all_holds([killed, early, late], [removal])
    assert problems == []
    [overlap] = check_single_holder(holds)
    assert overlap.startswith("partition 0 held by two processes: a (member A)") and "removed by the coordinator" in overlap


def test_a_killed_member_the_coordinator_never_removed_holds_forever() -> None:
    holds, problems = build_holds(MemberRecord("a", [assign(1.0, "A", 3)], [Fault("kill", 2.0)]), [])
    assert holds[0].end == math.inf
    assert problems == ["a: partition 3 (member A) was never released and the coordinator never removed the member"]


def test_a_thawed_members_zombie_batch_is_counted_and_its_commit_must_have_been_refused() -> None:
    events = [
        assign(1.0, "A", 0),
        processed(2.0, "A", 0, 0),  # frozen at 2.5, removed at 6.5, thawed at 8
        processed(8.1, "A", 0, 1, 2),  # the batch it had in hand
        commit(8.1, 8.2, 0, 3, error="UNKNOWN_MEMBER_ID"),
        revoke(8.3, "A", 0, kind="lost"),
    ]
    frozen = MemberRecord("a", events, [Fault("freeze", 2.5), Fault("thaw", 8.0)])
    holds, _ = all_holds([frozen], [Departure(6.5, "A", "removed by the coordinator")])
    checked = check_processing_within_holds([frozen], holds)
    assert checked.problems == [] and checked.zombie_records == 2 and checked.refused_commits == 1

    accepted = MemberRecord("a", [*events[:3], commit(8.1, 8.2, 0, 3), events[4]], frozen.faults)
    [problem] = check_processing_within_holds([accepted], holds).problems
    assert problem.startswith("a committed partition 0 at offset 3") and "without holding it" in problem


def test_processing_after_the_hold_ended_without_a_thaw_is_a_violation() -> None:
    stalled = MemberRecord("d", [assign(1.0, "D", 0), processed(7.0, "D", 0, 5), revoke(8.0, "D", 0, kind="lost")])
    holds, _ = all_holds([stalled], [Departure(5.0, "D", "left the group: max.poll.interval.ms passed without a poll")])
    [problem] = check_processing_within_holds([stalled], holds).problems
    assert problem.startswith("d processed partition 0 offsets 5..5") and "max.poll.interval.ms" in problem


def test_processing_a_partition_never_assigned_is_a_violation() -> None:
    record = MemberRecord("a", [assign(1.0, "A", 0), processed(2.0, "A", 1, 7)])
    holds, _ = all_holds([record], [Departure(3.0, "A", "removed")])
    [problem] = check_processing_within_holds([record], holds).problems
    assert "processed partition 1 offsets 7..7" in problem and "without holding it" in problem


@dataclass
class Delivery:
    partition: int
    offset: int


@dataclass
class Ledger:
    acknowledged: dict[bytes, Delivery]
    lock: threading.Lock = field(default_factory=threading.Lock)


def test_every_acknowledged_record_must_be_processed_at_its_offset() -> None:
    record = MemberRecord("a", [processed(1.0, "A", 0, 0, 1)])
    ledger = Ledger({b"v0-0": Delivery(0, 0), b"v0-1": Delivery(0, 1), b"v0-2": Delivery(0, 2), b"v0-1x": Delivery(0, -1)})
    assert check_every_record_processed([ledger], [record]) == [  # type: ignore[list-item]
        "acknowledged 'v0-1x' (partition 0 offset -1) was never processed",
        "acknowledged 'v0-2' (partition 0 offset 2) was never processed",
    ]


def test_committed_offsets_may_stay_or_grow_but_never_go_back() -> None:
    assert check_committed_never_backwards([(1.0, {0: 5}), (2.0, {0: 5, 1: 3}), (3.0, {0: 9})]) == []
    [problem] = check_committed_never_backwards([(1.0, {0: 5}), (2.0, {0: 4})])
    assert problem.startswith("partition 0: committed offset went back from 5")


def test_a_description_assigning_a_partition_twice_is_a_violation() -> None:
    fine = Snapshot(1.0, "Stable", 1, {"A": frozenset({0}), "B": frozenset({1})}, {})
    twice = Snapshot(2.0, "Reconciling", 1, {"A": frozenset({0}), "B": frozenset({0, 1})}, {})
    assert check_snapshots_single_owner([fine]) == []
    [problem] = check_snapshots_single_owner([fine, twice])
    assert problem.endswith("assigns partition 0 to ['A', 'B']")


def test_settled_needs_stable_every_member_at_its_target_and_each_partition_once() -> None:
    members = {"A": frozenset({0, 1}), "B": frozenset({2})}
    assert Snapshot(1.0, "Stable", 1, members, dict(members)).settled({"A", "B"}, 3)
    assert not Snapshot(1.0, "Reconciling", 1, members, dict(members)).settled({"A", "B"}, 3)
    assert not Snapshot(1.0, "Stable", 1, members, dict(members)).settled({"A", "B", "C"}, 3)
    assert not Snapshot(1.0, "Stable", 1, members, {"A": frozenset({0}), "B": frozenset({1, 2})}).settled({"A", "B"}, 3)
    assert not Snapshot(1.0, "Stable", 1, {"A": frozenset({0, 1})}, {"A": frozenset({0, 1})}).settled({"A"}, 3)


def test_removals_are_read_from_the_coordinators_log_for_the_plain_group_only(tmp_path: Path) -> None:
    log = tmp_path / "broker-1.log"
    log.write_text(
        "2026-01-02 03:04:05,678 INFO group-timers broker_nodes.coordinator.groups.coordinator: group tn-abc~checkers: member M1 removed: no heartbeat within its session timeout of 4000 ms\n"
        "2026-01-02 03:04:06,000 INFO group-timers broker_nodes.coordinator.groups.coordinator: group tn-abc~others: member M2 removed: no heartbeat within its session timeout of 4000 ms\n"
        "2026-01-02 03:04:07,000 INFO request_1 broker_nodes.coordinator.offset_store: partition 0 of __consumer_offsets: loaded 3 records\n"
    )
    [removal] = coordinator_removals([log, tmp_path / "missing.log"], "checkers")
    assert removal.member_id == "M1" and "session timeout" in removal.reason
    assert removal.t == datetime(2026, 1, 2, 3, 4, 5, 678000).timestamp()


def test_the_sdks_max_poll_interval_warning_is_a_departure_of_the_member_it_names() -> None:
    message = "Application maximum poll interval (4000ms) exceeded by 12ms: member Xy_9 leaves group checkers and its partitions are lost"
    [departure] = poll_interval_departures([{"e": "sdk", "t": 5.0, "message": message}, {"e": "sdk", "t": 6.0, "message": "something else"}])
    assert (departure.t, departure.member_id) == (5.0, "Xy_9")
