"""Proof: the group's coordinator broker killed (kill -9) under load; the group goes on with the
new coordinator and no acknowledged commit is lost.

Three member processes consume and commit (at-least-once, :mod:`tests.cluster.group_workload`)
a topic a producer keeps writing to. The test finds the coordinator the way a client does
(``describe_consumer_groups(...).coordinator``) and kills that broker. The leader of the
group's ``__consumer_offsets`` partition moves to another in-sync replica, which loads the
group's records and offsets from its log; the members find it (FindCoordinator) and go on with
their member ids and epochs.

Beside it, a librdkafka consumer in a classic (JoinGroup/SyncGroup) group whose offsets partition
is the same, so the kill takes its coordinator too: the new coordinator loads the classic group
from its record in ``__consumer_offsets`` and the consumer carries on with its member id,
generation and assignment (no second assignment, its commits accepted), as with Kafka.

Checked: a new broker answers for the group; every member process processes records and has a
commit accepted after it does; every commit acknowledged before the kill is still there (each committed offset read from
the new coordinator is at least the highest acknowledged before the kill) and committed offsets
never go back; plus the checks of :mod:`tests.cluster.group_workload` (one holder per partition,
every record processed, ...).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as LibrdkafkaConsumer

from log_formats.offset_commit_records import partition_for_group
from tests.cluster.group_workload import (
    GroupObserver,
    MemberFleet,
    MemberRecord,
    MemberSettings,
    Snapshot,
    acknowledged_commits,
    all_holds,
    check_committed_never_backwards,
    check_every_record_processed,
    check_processing_within_holds,
    check_single_holder,
    check_snapshots_single_owner,
    coordinator_removals,
    end_offsets,
    group_cluster_timings,
)
from tests.cluster.workload import ProducerWorkload
from tests.support.real_cluster import RealCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "steady"
GROUP = "survivors"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
# A synchronous commit waits through the coordinator's failover; the members must not be
# taken for stuck meanwhile.
MAX_POLL_INTERVAL_MS = 30000
PRODUCE_INTERVAL_SECONDS = 0.01
SETTLE_SECONDS = 30.0
FAILOVER_SECONDS = 30.0  # the controller fences the broker (2 s session) and a new leader loads the group
DRAIN_SECONDS = 60.0
# The classic consumer's session outlasts the failover (librdkafka gives up a session that long
# without a heartbeat answer, and rejoins).
CLASSIC_SESSION_TIMEOUT_MS = 45000


class ClassicMember:
    """A librdkafka consumer in a classic group, polled (and closed) by its own thread; records its
    assignments, member ids and the times of its successful commits."""

    def __init__(self, config: dict[str, object]) -> None:
        self._config = {
            **config,
            "session.timeout.ms": CLASSIC_SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 1000,
            "auto.commit.interval.ms": 1000,
            "on_commit": self._committed,
        }
        self.assignments = 0
        self.member_ids: list[str] = []
        self.commits: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="classic-member", daemon=True)

    def __enter__(self) -> ClassicMember:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _committed(self, error: object, _partitions: object) -> None:
        if error is None:
            self.commits.append(time.time())
        else:
            self.errors.append(str(error))

    def _assigned(self, _consumer: object, _partitions: object) -> None:
        self.assignments += 1

    def _run(self) -> None:
        consumer = LibrdkafkaConsumer(self._config)
        consumer.subscribe([TOPIC], on_assign=self._assigned)
        try:
            while not self._stop.is_set():
                consumer.poll(0.2)
                member_id = consumer.memberid()
                if member_id and (not self.member_ids or self.member_ids[-1] != member_id):
                    self.member_ids.append(member_id)
        finally:
            consumer.close()

    def summary(self) -> str:
        return f"classic member: {self.assignments} assignments, member ids {self.member_ids}, {len(self.commits)} commits, errors {self.errors[-5:]}"


def classic_group_beside(cluster: RealCluster, group: str) -> str:
    """A group id whose ``__consumer_offsets`` partition (so coordinator) is ``group``'s."""
    count = len(cluster.internal_partition_rows("__consumer_offsets"))
    wanted = partition_for_group(cluster.qualified(group), count)
    return next(name for name in (f"classic-{index}" for index in range(10_000)) if partition_for_group(cluster.qualified(name), count) == wanted)


def test_group_goes_on_with_a_new_coordinator_after_kill_9_and_keeps_every_acknowledged_commit(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(timings=group_cluster_timings())
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    settings = MemberSettings(cluster.client_config(), GROUP, TOPIC, SESSION_TIMEOUT_MS, MAX_POLL_INTERVAL_MS)
    with (
        ProducerWorkload(cluster.client_config(), TOPIC, PARTITIONS, "steady", interval_seconds=PRODUCE_INTERVAL_SECONDS) as producer,
        MemberFleet(tmp_path / "members", settings) as fleet,
        GroupObserver(cluster.client_config(), GROUP, TOPIC) as observer,
        ClassicMember(cluster.kafka_client_config(**{"group.id": classic_group_beside(cluster, GROUP)})) as classic,
    ):

        def wait(condition: Callable[[], Any], what: str, timeout: float) -> Any:
            try:
                return cluster.wait_until(condition, what, timeout)
            except AssertionError as failure:
                raise AssertionError(
                    f"{failure}\nlast description: {observer.latest_snapshot()}\nlast offsets: {observer.latest_offsets()}\n"
                    f"observer errors: {observer.latest_errors()}\n{fleet.output_tails()}"
                ) from None

        def settled() -> bool:
            return fleet.settled(observer.latest_snapshot(), PARTITIONS)

        producer.start()
        for name in ("a", "b", "c"):
            fleet.start(name)
        wait(settled, "a, b and c joined and the group settled", SETTLE_SECONDS)
        wait(lambda: len(observer.latest_offsets()) == PARTITIONS, "every partition has a committed offset", SETTLE_SECONDS)
        wait(lambda: classic.assignments == 1 and classic.commits, f"the classic member joined and committed; {classic.summary()}", SETTLE_SECONDS)
        coordinator = observer.latest_snapshot().coordinator  # type: ignore[union-attr]
        killed_at = time.time()
        cluster.kill(coordinator)

        def new_coordinator() -> Snapshot | None:
            snapshot = observer.latest_snapshot()
            return snapshot if snapshot is not None and snapshot.t > killed_at and snapshot.coordinator != coordinator else None

        taken_over = wait(new_coordinator, f"another broker than killed broker {coordinator} coordinates the group", FAILOVER_SECONDS)
        before = acknowledged_commits([MemberRecord.of(member) for member in fleet.members.values()], killed_at)
        wait(
            lambda: all(observer.latest_offsets().get(partition, -1) > offset for partition, offset in before.items()),
            f"the group commits past {before} on the new coordinator",
            FAILOVER_SECONDS,
        )
        wait(settled, "the group settled on the new coordinator", SETTLE_SECONDS)
        # Kafka's rule for classic groups: the new coordinator loaded the group, so its member goes on
        # in its generation (a commit accepted) without rejoining (one member id, one assignment).
        wait(lambda: classic.commits[-1] > taken_over.t, f"the classic member's commit accepted by the new coordinator; {classic.summary()}", SETTLE_SECONDS)
        assert classic.assignments == 1 and len(classic.member_ids) == 1, f"the classic member rejoined after the failover; {classic.summary()}"
        wait(
            lambda: all(member.last_processed() > taken_over.t and member.last_commit_sent() > taken_over.t for member in fleet.live()),
            "every member processed records and had a commit accepted after the new coordinator took over",
            SETTLE_SECONDS,
        )
        ledger = producer.stop()
        ends = end_offsets(cluster.client_config(), TOPIC, PARTITIONS)
        wait(
            lambda: all(observer.latest_offsets().get(partition, -1) >= end for partition, end in ends.items()),
            f"the group committed the end offsets {ends}",
            DRAIN_SECONDS,
        )
        exits = fleet.close_all()
    observer.stop()

    records = [MemberRecord.of(member) for member in fleet.members.values()]
    departures = coordinator_removals([broker.log_path for broker in cluster.brokers.values()], GROUP)
    holds, problems = all_holds(records, departures)
    problems += check_single_holder(holds)
    processing = check_processing_within_holds(records, holds)
    problems += processing.problems
    problems += check_every_record_processed([ledger], records)
    offsets = observer.offsets()
    problems += check_committed_never_backwards(offsets)
    problems += check_snapshots_single_owner(observer.snapshots())
    for t, sample in offsets:
        if t > taken_over.t:
            problems += [
                f"partition {partition}: the new coordinator has offset {sample.get(partition)} at {t:.3f}, below {offset} acknowledged before the kill"
                for partition, offset in sorted(before.items())
                if sample.get(partition, -1) < offset
            ]
    summary = (
        f"{ledger.summary()}; killed coordinator {coordinator}, broker {taken_over.coordinator} took over {taken_over.t - killed_at:.1f} s later; "
        f"acknowledged before the kill {before}; {processing.successful_commits} commits, {processing.refused_commits} refused or failed; "
        f"departures {departures}; exits {exits}"
    )
    assert not problems, f"{len(problems)} violations, first 10:\n" + "\n".join(problems[:10]) + f"\n{summary}\n{fleet.output_tails()}"
    assert len(before) == PARTITIONS, f"commits of every partition were acknowledged before the kill: {summary}"
    assert all(code == 0 for code in exits.values()), f"members did not close cleanly: {exits}\n{fleet.output_tails()}"
