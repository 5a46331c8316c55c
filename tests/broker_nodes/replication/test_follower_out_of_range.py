"""A follower's answer to OFFSET_OUT_OF_RANGE, against a scripted leader served on a loopback port."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from broker_nodes.replication.follower import FetcherSettings, ReplicaFetcher
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.log_config import LogConfig
from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.storage.conftest import make_batch
from weir.errors import ErrorCode

TOPIC = "orders"
LEADER_EPOCH = 1
# How long the scripted leader holds an empty answer, standing in for the long poll.
EMPTY_ANSWER_SECONDS = 0.02


class ScriptedLeader(replication_pb2_grpc.ReplicationServicer):
    """Answers the first fetch with OFFSET_OUT_OF_RANGE and the given log range (unless told not to),
    then empty answers carrying that range; records every fetch offset."""

    def __init__(self, log_start: int, log_end: int, *, refuse_first_fetch: bool = True) -> None:
        self.log_start = log_start
        self.log_end = log_end
        self.refuse_first_fetch = refuse_first_fetch
        self.fetch_offsets: list[int] = []
        self._lock = threading.Lock()

    def OffsetForLeaderEpoch(self, request, context):  # type: ignore[no-untyped-def]
        # Nothing diverges: every epoch asked for ends where the follower's log ends.
        return replication_pb2.OffsetForLeaderEpochResponse(
            partitions=[
                replication_pb2.OffsetForLeaderEpochPartitionResponse(
                    topic=item.topic, partition=item.partition, leader_epoch=item.leader_epoch, end_offset=1 << 40
                )
                for item in request.partitions
            ]
        )

    def ReplicaFetch(self, request, context):  # type: ignore[no-untyped-def]
        item = request.partitions[0]
        with self._lock:
            first = not self.fetch_offsets
            self.fetch_offsets.append(item.fetch_offset)
        if first and self.refuse_first_fetch:
            answer = replication_pb2.ReplicaFetchPartitionResponse(
                topic=item.topic,
                partition=item.partition,
                error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
                error_message="out of range",
                high_watermark=-1,
                log_start_offset=self.log_start,
                log_end_offset=self.log_end,
            )
        else:
            time.sleep(EMPTY_ANSWER_SECONDS)
            answer = replication_pb2.ReplicaFetchPartitionResponse(
                topic=item.topic, partition=item.partition, high_watermark=item.fetch_offset, log_start_offset=self.log_start, log_end_offset=self.log_end
            )
        return replication_pb2.ReplicaFetchResponse(partitions=[answer])


@pytest.fixture
def follower_log(tmp_path: Path) -> Iterator[PartitionLog]:
    log = PartitionLog.open(tmp_path / f"{TOPIC}-0", LogConfig.from_overrides({}))
    for number in range(10):
        log.append_as_leader(make_batch([b"record-%d" % number]), LEADER_EPOCH)
    yield log
    log.close()


@contextmanager
def following(leader: ScriptedLeader, log: PartitionLog) -> Iterator[ReplicaFetcher]:
    """Serve ``leader`` and run a fetcher replicating partition 0 of ``TOPIC`` from it into ``log``."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    replication_pb2_grpc.add_ReplicationServicer_to_server(leader, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    settings = FetcherSettings(max_wait_ms=50, max_bytes=1 << 20, backoff_ms=20, channel_factory=grpc.insecure_channel)
    fetcher = ReplicaFetcher(2, 1, f"127.0.0.1:{port}", internal_token="token", logs=lambda topic, partition: log, settings=settings)
    fetcher.start()
    fetcher.add_partition(TOPIC, 0, LEADER_EPOCH)
    try:
        yield fetcher
    finally:
        fetcher.stop()
        server.stop(None)


def test_follower_below_the_leaders_log_start_restarts_its_log_there(follower_log: PartitionLog) -> None:
    leader = ScriptedLeader(log_start=500, log_end=800)
    with following(leader, follower_log):
        wait_until(lambda: 500 in leader.fetch_offsets, what="a fetch from the leader's log start")
    assert leader.fetch_offsets[0] == 10
    assert (follower_log.log_start_offset, follower_log.log_end_offset) == (500, 500)
    assert follower_log.leader_epoch_cache.entries == []


def test_follower_past_the_leaders_log_end_truncates_to_it(follower_log: PartitionLog) -> None:
    leader = ScriptedLeader(log_start=0, log_end=4)
    with following(leader, follower_log):
        wait_until(lambda: 4 in leader.fetch_offsets, what="a fetch from the leader's log end")
    assert (follower_log.log_start_offset, follower_log.log_end_offset) == (0, 4)


def test_follower_mirrors_the_log_start_of_the_leaders_answers(follower_log: PartitionLog) -> None:
    follower_log.update_high_watermark(10)
    leader = ScriptedLeader(log_start=6, log_end=10, refuse_first_fetch=False)
    with following(leader, follower_log):
        wait_until(lambda: follower_log.log_start_offset == 6, what="the follower's log start to follow the leader's")
    assert follower_log.log_end_offset == 10


def test_an_answer_without_the_leaders_range_changes_nothing(follower_log: PartitionLog) -> None:
    leader = ScriptedLeader(log_start=-1, log_end=-1)
    with following(leader, follower_log):
        wait_until(lambda: len(leader.fetch_offsets) >= 3, what="fetches after the refusal")
    assert set(leader.fetch_offsets) == {10}
    assert (follower_log.log_start_offset, follower_log.log_end_offset) == (0, 10)
