"""Proof: a consumer group whose members join, leave, are killed (kill -9) and stall never lets
two members hold one partition at once, processes every record at least once, and never moves
a committed offset back.

A producer writes numbered records to six partitions while member processes (at-least-once:
process, then commit; see :mod:`tests.cluster.group_workload`) go through, one after the other:
three join; a fourth joins; one is killed with -9 (the coordinator removes it after its session
timeout); one is frozen with SIGSTOP past its session timeout and thawed (it hears it was
removed, loses its partitions and rejoins); one stops polling past max.poll.interval.ms (it
leaves, then rejoins); one closes while a new one joins. After each step the test waits for
the group to settle (Stable, every live process a member, every partition assigned once). At
the end every member drains the topic and closes.

The checks read the member processes' event logs, the coordinators' logs (when a timer
removed a member) and what an observer read every 200 ms (descriptions and committed
offsets); "holds" is defined in :mod:`tests.cluster.group_workload`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cluster.group_workload import (
    GroupObserver,
    MemberFleet,
    MemberRecord,
    MemberSettings,
    all_holds,
    check_committed_never_backwards,
    check_every_record_processed,
    check_processing_within_holds,
    check_single_holder,
    check_snapshots_single_owner,
    coordinator_removals,
    end_offsets,
    event_counts,
    group_cluster_timings,
    poll_interval_departures,
)
from tests.cluster.workload import ProducerWorkload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "checked"
GROUP = "checkers"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 4000  # the members' session.timeout.ms (the coordinator uses theirs)
MAX_POLL_INTERVAL_MS = 4000
STALL_SECONDS = MAX_POLL_INTERVAL_MS / 1000 + 2.0  # the application-level stall: past max.poll.interval.ms
FREEZE_SECONDS = SESSION_TIMEOUT_MS / 1000 + 2.5  # SIGSTOP: past the session timeout
PRODUCE_INTERVAL_SECONDS = 0.01  # a steady hundred records a second
SETTLE_SECONDS = 30.0  # a step's rebalance ends within this
DRAIN_SECONDS = 60.0  # the members commit the end of every partition within this


def test_members_joining_leaving_killed_and_stalled_never_share_a_partition_and_process_everything(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(timings=group_cluster_timings())
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    settings = MemberSettings(cluster.client_config(), GROUP, TOPIC, SESSION_TIMEOUT_MS, MAX_POLL_INTERVAL_MS, STALL_SECONDS)
    with (
        ProducerWorkload(cluster.client_config(), TOPIC, PARTITIONS, "numbered", interval_seconds=PRODUCE_INTERVAL_SECONDS) as producer,
        MemberFleet(tmp_path / "members", settings) as fleet,
        GroupObserver(cluster.client_config(), GROUP, TOPIC) as observer,
    ):

        def settle(step: str) -> None:
            try:
                cluster.wait_until(lambda: fleet.settled(observer.latest_snapshot(), PARTITIONS), f"the group settled after: {step}", SETTLE_SECONDS)
            except AssertionError as failure:
                raise AssertionError(
                    f"{failure}\nlast description: {observer.latest_snapshot()}\nlive members: {fleet.live_member_ids()}\n"
                    f"observer errors: {observer.latest_errors()}\n{fleet.output_tails()}"
                ) from None

        def lost_after(name: str, t: float) -> bool:
            return any(event["e"] == "lost" and event["t"] > t for event in fleet.members[name].events())

        producer.start()
        for name in ("a", "b", "c"):
            fleet.start(name)
        settle("a, b and c joined")
        fleet.start("d")
        settle("d joined")
        fleet.members["b"].kill()
        settle("b was killed with -9")
        frozen = fleet.members["c"]
        frozen.freeze()
        time.sleep(FREEZE_SECONDS)  # the fault itself: c stays frozen past its session timeout
        frozen.thaw()
        cluster.wait_until(lambda: lost_after("c", frozen.faults[-1].t), "c, thawed, lost its partitions", SETTLE_SECONDS)
        settle("c was frozen past its session timeout and thawed")
        stalled = fleet.members["d"]
        stalled.stall()
        cluster.wait_until(lambda: lost_after("d", stalled.faults[-1].t), "d, after stalling, lost its partitions", SETTLE_SECONDS + STALL_SECONDS)
        settle("d stopped polling past max.poll.interval.ms")
        fleet.start("e")
        closed_a = fleet.members["a"].close()
        settle("a closed while e joined")
        ledger = producer.stop()
        ends = end_offsets(cluster.client_config(), TOPIC, PARTITIONS)
        cluster.wait_until(
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
    problems += check_committed_never_backwards(observer.offsets())
    problems += check_snapshots_single_owner(observer.snapshots())
    summary = (
        f"{ledger.summary()}; {len(holds)} holds; departures {departures} + poll-interval leaves {[poll_interval_departures(record.events) for record in records]}; "
        f"{processing.zombie_records} zombie records, {processing.successful_commits} commits, {processing.refused_commits} refused; "
        f"processed batches {event_counts(records, 'processed')}; exits {exits} (a: {closed_a}); {len(observer.snapshots())} descriptions"
    )
    assert not problems, f"{len(problems)} violations, first 10:\n" + "\n".join(problems[:10]) + f"\n{summary}\n{fleet.output_tails()}"

    # The faults did what the scenario says.
    ids = {record.name: {event["member"] for event in record.events if event["e"] == "member"} for record in records}
    by_name = {record.name: record for record in records}
    [killed_at] = by_name["b"].fault_times("kill")
    [frozen_at], [thawed_at] = by_name["c"].fault_times("freeze"), by_name["c"].fault_times("thaw")
    assert any(departure.member_id in ids["b"] and departure.t > killed_at for departure in departures), (
        f"the coordinator never removed b {ids['b']} after the kill: {summary}"
    )
    assert any(departure.member_id in ids["c"] and frozen_at < departure.t < thawed_at for departure in departures), (
        f"the coordinator never removed c {ids['c']} while frozen: {summary}"
    )
    assert len(ids["c"]) >= 2 and len(ids["d"]) >= 2, f"c and d rejoined with new member ids: {ids}"
    assert poll_interval_departures(by_name["d"].events), f"d never left for not polling: {summary}"
    assert any(event["e"] == "error" and event["code"] == "_MAX_POLL_EXCEEDED" for event in by_name["d"].events), (
        f"d's poll() never reported _MAX_POLL_EXCEEDED: {summary}"
    )
    assert closed_a == 0 and all(exits[name] == 0 for name in ("c", "d", "e")), f"members did not close cleanly: {exits}, a: {closed_a}\n{fleet.output_tails()}"
    assert any(event["e"] == "revoke" for event in by_name["a"].events), "a gave its partitions up on close"
    assert {hold.process for hold in holds} == set(fleet.members), f"every member process held partitions: {summary}"
