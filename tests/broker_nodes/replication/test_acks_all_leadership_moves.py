"""An acks=all produce whose partition's leadership moves away between the append and the wait is
answered NOT_LEADER_OR_FOLLOWER (retried at the new leader), never success.

Found by the rolling-restart test under load: a controlled shutdown moved the leadership while a
batch was appended but not yet waited for; the leader answered success without waiting, the new
leader did not have the batch, the followers truncated it, and the idempotent producer's next batch
was refused OUT_OF_ORDER_SEQUENCE_NUMBER: an acknowledged record was lost.
"""

from __future__ import annotations

from pathlib import Path

from broker_nodes.cluster_state import NotLeaderOrFollowerError
from tests.broker_nodes.replication.cluster import QUALIFIED, ReplicatedCluster, wait_until
from tests.broker_nodes.server.helpers import batch


def test_a_leadership_lost_after_the_append_fails_the_acks_all_wait(tmp_path: Path) -> None:
    cluster = ReplicatedCluster(tmp_path)
    try:
        cluster.apply(leader=1, epoch=1)
        wait_until(lambda: cluster.isr(1) == (1, 2, 3), what="the full ISR")
        moved: list[bool] = []

        def move_leadership_away(topic: str, partition: int, info: object) -> None:
            # Between this batch's append and its acks=all wait: broker 1 learns that broker 2 leads now.
            cluster.apply(leader=2, epoch=2, to=[1])
            moved.append(True)

        [result] = cluster.nodes[1].broker.replica_manager.append_records(
            -1, [(QUALIFIED, 0, batch([b"in flight"]))], timeout_ms=5000, on_append=move_leadership_away
        )

        assert moved == [True]
        assert isinstance(result, NotLeaderOrFollowerError), result
    finally:
        cluster.stop()
