"""A follower retries a partition the leader refused soon, then less and less often (up to replica.fetch.backoff.ms)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from broker_nodes.replication.follower import FIRST_RETRY_BACKOFF_MS, FetcherSettings, ReplicaFetcher, retry_backoff_ms
from tests.broker_nodes.replication.cluster import QUALIFIED, ReplicatedCluster, wait_until
from weir.errors import ErrorCode

KEY = (QUALIFIED, 0)


def test_the_pause_doubles_from_a_short_first_retry_up_to_the_fetch_backoff() -> None:
    assert [retry_backoff_ms(failures, 1000) for failures in range(1, 10)] == [10, 20, 40, 80, 160, 320, 640, 1000, 1000]
    assert retry_backoff_ms(1000, 1000) == 1000  # no overflow however long the errors last
    assert retry_backoff_ms(1, 5) == 5  # a backoff setting below the first pause wins


def test_a_partition_backing_off_cuts_the_long_poll_of_the_others_short() -> None:
    settings = FetcherSettings(max_wait_ms=500, max_bytes=1024, backoff_ms=1000, channel_factory=grpc.insecure_channel)
    fetcher = ReplicaFetcher(2, 1, "127.0.0.1:1", internal_token="token", logs=lambda topic, partition: None, settings=settings)
    try:
        fetcher.add_partition("quiet", 0, 1, interrupt=False)
        fetcher.add_partition("refused", 0, 1, interrupt=False)
        with fetcher._lock:
            fetcher._back_off_locked(fetcher._partitions[("refused", 0)], ErrorCode.NOT_LEADER_OR_FOLLOWER, "not yet", ("refused", 0))
        to_truncate, _ = fetcher._due(time.monotonic())  # (neither is truncated yet: truncation comes first)
        assert list(to_truncate) == [("quiet", 0)]
        assert 0 <= fetcher._max_wait_ms() <= FIRST_RETRY_BACKOFF_MS  # not the 500 ms of replica.fetch.wait.max.ms
        fetcher.remove_partition("refused", 0)
        fetcher._due(time.monotonic())
        assert fetcher._max_wait_ms() == 500
    finally:
        fetcher._channel.close()  # never started: no thread to stop


@pytest.fixture
def slow_backoff_cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    # A backoff far beyond the produce's timeout: a follower that waited it out could not make the produce succeed.
    running = ReplicatedCluster(tmp_path, topic_configs={"min.insync.replicas": "3"}, broker_configs={"replica.fetch.backoff.ms": "600000"})
    try:
        yield running
    finally:
        running.stop()


def _followers_refused(cluster: ReplicatedCluster) -> bool:
    """Both followers have had their fetch of the partition refused by the leader (which has no map yet)."""
    for node_id in (2, 3):
        fetchers = list(cluster.nodes[node_id].broker.replication._fetchers.values())
        if not any(fetcher._partitions.get(KEY) is not None and fetcher._partitions[KEY].failures > 0 for fetcher in fetchers):
            return False
    return True


def test_followers_that_learn_of_a_partition_before_its_leader_replicate_it_once_the_leader_does(slow_backoff_cluster: ReplicatedCluster) -> None:
    cluster = slow_backoff_cluster
    cluster.apply(leader=1, epoch=1, to=[2, 3])
    wait_until(lambda: _followers_refused(cluster), what="the followers' first fetches refused")
    cluster.apply(leader=1, epoch=1, to=[1])
    response = cluster.produce(1, [b"first"], timeout_ms=20_000)
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message
    assert cluster.log(2).log_end_offset == cluster.log(3).log_end_offset == 1
