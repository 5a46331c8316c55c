"""Proof: the group's coordinator broker killed (kill -9) under load; the group goes on with the
new coordinator and no acknowledged commit is lost.

Three member processes consume and commit (at-least-once, :mod:`tests.cluster.group_workload`)
a topic a producer keeps writing to. The test finds the coordinator the way a client does
(``describe_consumer_groups(...).coordinator``) and kills that broker. The leader of the
group's ``__consumer_offsets`` partition moves to another in-sync replica, which loads the
group's records and offsets from its log; the members find it (FindCoordinator) and go on with
their member ids and epochs.

Checked: a new broker answers for the group; every member process processes records and has a
commit accepted after it does; every commit acknowledged before the kill is still there (each committed offset read from
the new coordinator is at least the highest acknowledged before the kill) and committed offsets
never go back; plus the checks of :mod:`tests.cluster.group_workload` (one holder per partition,
every record processed, ...).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def test_group_goes_on_with_a_new_coordinator_after_kill_9_and_keeps_every_acknowledged_commit(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(timings=group_cluster_timings())
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    settings = MemberSettings(cluster.client_config(), GROUP, TOPIC, SESSION_TIMEOUT_MS, MAX_POLL_INTERVAL_MS)
    with (
        ProducerWorkload(cluster.client_config(), TOPIC, PARTITIONS, "steady", interval_seconds=PRODUCE_INTERVAL_SECONDS) as producer,
        MemberFleet(tmp_path / "members", settings) as fleet,
        GroupObserver(cluster.client_config(), GROUP, TOPIC) as observer,
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
