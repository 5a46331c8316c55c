"""kill -9 of a partition's leader while an idempotent producer has several (up to five) batches of
the partition in flight: every acknowledged record is read back once, in produce() order, at the offset it was
acknowledged at, and the three replicas agree.

The producer (weir SDK, acks=all, enable.idempotence, max.in.flight.requests.per.connection 5)
writes small batches (full at 5 records, so they leave at once and are pipelined) as fast as it
can, so that each kill lands on a pipeline: the batches
in flight at the dead leader are resent to the new one with their sequence numbers, those it had
appended before dying are recognised as duplicates, and those that overtook an earlier batch are
resent behind it. The test records the most batches of the partition the producer had in flight.
"""

from __future__ import annotations

import pytest

from tests.cluster.workload import (
    ProducerWorkload,
    check_acknowledged_records_read_back,
    check_consumed_matches_replicas,
    check_no_duplicates,
    check_producer_order,
    check_replicas_agree,
    read_everything,
)
from tests.support.real_cluster import ClusterTimings
from weir.producer_idempotence import PartitionQueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "pipelined"
KILLS = 2
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=2000)
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 15
IN_FLIGHT = 5


def test_a_pipelined_producer_keeps_order_and_exactly_once_across_leader_kills(start_cluster, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    most_in_flight = 0
    mark_sent = PartitionQueue.mark_sent

    def recording_mark_sent(queue: PartitionQueue, batch) -> None:  # type: ignore[no-untyped-def]
        nonlocal most_in_flight
        mark_sent(queue, batch)
        most_in_flight = max(most_in_flight, queue.in_flight)

    monkeypatch.setattr(PartitionQueue, "mark_sent", recording_mark_sent)
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    settings = {"linger.ms": 0, "batch.num.messages": 5, "max.in.flight.requests.per.connection": IN_FLIGHT}
    workload = ProducerWorkload({**cluster.client_config(), **settings}, TOPIC, 1, "p", interval_seconds=0.0005).start()
    history = []
    try:
        for _ in range(KILLS):
            cluster.wait_until(lambda: workload.acknowledged_count() > 0 and most_in_flight >= 2, "the producer pipelining acknowledged batches", 60)
            victim = cluster.leader_of(TOPIC, 0)
            acknowledged = workload.acknowledged_count()
            cluster.kill(victim)
            cluster.wait_until(
                lambda victim=victim: cluster.leader_of(TOPIC, 0) not in (victim, -1), f"partition 0 led by another replica than {victim}", FAILOVER_SECONDS
            )
            cluster.wait_until(lambda acknowledged=acknowledged: workload.acknowledged_count() > acknowledged + 100, "acknowledgements from the new leader", 60)
            cluster.start_broker(victim)
            cluster.wait_for_full_isr(TOPIC, timeout=60)
            history.append(f"killed broker {victim} with {acknowledged} acknowledged")
    finally:
        ledger = workload.stop()
    run = "; ".join(history) + "\n" + ledger.summary() + f"; most batches of the partition in flight: {most_in_flight}"

    end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
    consumed = read_everything(cluster.client_config(), TOPIC, end_offsets)
    problems = check_acknowledged_records_read_back([ledger], consumed) + check_no_duplicates(consumed) + check_producer_order(consumed)
    replicas = cluster.replica_logs(TOPIC, 0)
    problems += check_replicas_agree(0, replicas) + check_consumed_matches_replicas(0, consumed, replicas)
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{run}"
    assert most_in_flight >= 2, run  # (how many depends on the machine; IN_FLIGHT at most)
    assert not ledger.failed and not ledger.produce_errors, run
    assert set(ledger.acknowledged) == set(ledger.sent), f"records never acknowledged; {run}"
    assert not consumed.errors, f"consumer errors {consumed.errors[:5]}; {run}"
