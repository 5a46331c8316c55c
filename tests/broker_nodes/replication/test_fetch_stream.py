"""Followers fetch on one ReplicaFetchStream per leader: held across fetches, cut short by a partition
change, cancelled past its answer deadline, given up for unary calls on a leader without it; and the
leader's servicer answers a stream's fetches in order behind the internal credential."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from broker_nodes.replication import follower as follower_module
from broker_nodes.replication.fetch_stream import AnswerDeadline
from broker_nodes.replication.follower import FetcherSettings, ReplicaFetcher
from broker_nodes.storage.leader_epoch_cache import UNDEFINED_EPOCH
from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc
from tests.broker_nodes.replication.cluster import QUALIFIED, ReplicatedCluster, wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN
from weir.errors import ErrorCode

SERVICE = "weir.v1.Replication"
TOKEN = (("x-weir-internal-token", INTERNAL_TOKEN),)


# ---------------------------------------------------------------- the answer deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_deadline_expires_only_once_passed_and_armed() -> None:
    clock, expired = Clock(), []
    deadline = AnswerDeadline("test-deadline", monotonic=clock)
    # Closed first, so that arm() starts no watching thread: a watcher scheduled late on a busy machine saw the manual
    # clock already past the deadline and expired it before the test's own expire_due() could.
    deadline.close()
    try:
        deadline.arm(5.0, lambda: expired.append("first"))
        clock.now += 4.9
        assert not deadline.expire_due()
        clock.now += 0.2
        assert deadline.expire_due() and expired == ["first"]
        assert not deadline.expire_due()  # once

        deadline.arm(5.0, lambda: expired.append("answered in time"))
        deadline.disarm()
        clock.now += 60
        assert not deadline.expire_due() and expired == ["first"]
    finally:
        deadline.close()


def test_the_watching_thread_cancels_an_overdue_answer() -> None:
    fired = threading.Event()
    deadline = AnswerDeadline("test-deadline")
    try:
        deadline.arm(0.05, fired.set)
        assert fired.wait(10)
    finally:
        deadline.close()


# ---------------------------------------------------------------- a follower against a fake leader


@dataclass
class FakeLog:
    """What a fetcher reads and writes of a follower's log."""

    log_end_offset: int = 0
    log_start_offset: int = 0
    leader_epoch_cache: Any = field(default_factory=lambda: type("Cache", (), {"latest_epoch": UNDEFINED_EPOCH})())

    def append_as_follower(self, records: bytes) -> None:
        raise AssertionError("the fake leader sends no records")

    def update_high_watermark(self, offset: int) -> None:
        pass

    def increase_log_start_offset(self, offset: int) -> None:
        pass


class FakeLeader:
    """A Replication server whose fetch answers the test decides; it records every stream's requests."""

    def __init__(self, *, streams: bool = True) -> None:
        self.streams: list[list[replication_pb2.ReplicaFetchRequest]] = []
        self.unary: list[replication_pb2.ReplicaFetchRequest] = []
        self.tokens: list[str | None] = []
        self.held_streams = 0  # on streams before this one, fetches after the first are not answered (cancelled ends them)
        self._tick = threading.Event()  # never set: paces the held fetches' look at their stream
        self.ended = threading.Event()  # a stream's handler returned
        fetch_handlers = {
            "ReplicaFetch": grpc.unary_unary_rpc_method_handler(
                self._unary,
                request_deserializer=replication_pb2.ReplicaFetchRequest.FromString,
                response_serializer=replication_pb2.ReplicaFetchResponse.SerializeToString,
            )
        }
        if streams:
            fetch_handlers["ReplicaFetchStream"] = grpc.stream_stream_rpc_method_handler(
                self._stream,
                request_deserializer=replication_pb2.ReplicaFetchRequest.FromString,
                response_serializer=replication_pb2.ReplicaFetchResponse.SerializeToString,
            )
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[grpc.method_handlers_generic_handler(SERVICE, fetch_handlers)])
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _token(self, context: grpc.ServicerContext) -> None:
        self.tokens.append(next((value for key, value in context.invocation_metadata() if key == "x-weir-internal-token"), None))

    def _unary(self, request: replication_pb2.ReplicaFetchRequest, context: grpc.ServicerContext) -> replication_pb2.ReplicaFetchResponse:
        self._token(context)
        self.unary.append(request)
        return replication_pb2.ReplicaFetchResponse(session_id=7)

    def _stream(self, requests: Iterator[replication_pb2.ReplicaFetchRequest], context: grpc.ServicerContext) -> Iterator[replication_pb2.ReplicaFetchResponse]:
        self._token(context)
        seen: list[replication_pb2.ReplicaFetchRequest] = []
        self.streams.append(seen)
        held = len(self.streams) <= self.held_streams
        try:
            for request in requests:
                seen.append(request)
                while len(seen) > 1 and held and context.is_active():
                    self._tick.wait(0.01)
                if not context.is_active():
                    return
                yield replication_pb2.ReplicaFetchResponse(session_id=7)
        finally:
            self.ended.set()

    def stop(self) -> None:
        self.server.stop(None)


@pytest.fixture
def fetcher_for() -> Iterator[Callable[[FakeLeader], ReplicaFetcher]]:
    started: list[ReplicaFetcher] = []

    def start(leader: FakeLeader) -> ReplicaFetcher:
        logs = {("t", 0): FakeLog(), ("t", 1): FakeLog()}
        settings = FetcherSettings(max_wait_ms=0, max_bytes=1024, backoff_ms=10, channel_factory=grpc.insecure_channel)
        fetcher = ReplicaFetcher(
            2,
            1,
            f"127.0.0.1:{leader.port}",
            internal_token=INTERNAL_TOKEN,
            logs=cast(Any, lambda topic, partition: logs.get((topic, partition))),
            settings=settings,
        )
        fetcher.add_partition("t", 0, 1)
        fetcher.start()
        started.append(fetcher)
        return fetcher

    yield start
    for fetcher in started:
        fetcher.stop()


@pytest.fixture
def leader() -> Iterator[FakeLeader]:
    running = FakeLeader()
    yield running
    running.stop()


def test_a_follower_sends_its_session_fetches_on_one_stream_with_the_credential(
    leader: FakeLeader, fetcher_for: Callable[[FakeLeader], ReplicaFetcher]
) -> None:
    fetcher_for(leader)
    wait_until(lambda: len(leader.streams) == 1 and len(leader.streams[0]) >= 4, what="four fetches on the stream")
    first = leader.streams[0][:4]
    assert [(request.session_id, request.session_epoch) for request in first] == [(0, 0), (7, 1), (7, 2), (7, 3)]
    assert [item.topic for item in first[0].partitions] == ["t"]
    assert len(leader.streams) == 1 and not leader.unary
    assert leader.tokens == [INTERNAL_TOKEN]


def test_a_partition_change_cuts_the_stream_short_and_a_new_stream_starts_in_full(
    leader: FakeLeader, fetcher_for: Callable[[FakeLeader], ReplicaFetcher]
) -> None:
    leader.held_streams = 1  # the first stream's second fetch long-polls until cancelled
    fetcher = fetcher_for(leader)
    wait_until(lambda: len(leader.streams) == 1 and len(leader.streams[0]) == 2, what="a second fetch waiting on the stream")
    fetcher.add_partition("t", 1, 1)
    wait_until(lambda: len(leader.streams) >= 2 and len(leader.streams[1]) >= 1, what="a new stream")
    full = leader.streams[1][0]
    assert (full.session_id, full.session_epoch) == (0, 0)
    assert sorted(item.partition for item in full.partitions) == [0, 1]
    assert leader.ended.wait(10)  # the cancelled stream's handler returned


def test_a_stream_without_an_answer_in_time_is_cancelled_and_opened_again(
    leader: FakeLeader, fetcher_for: Callable[[FakeLeader], ReplicaFetcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follower_module, "CALL_DEADLINE_MARGIN_SECONDS", 0.2)
    leader.held_streams = 1000  # second fetches never answered: the follower's deadline ends each stream
    fetcher_for(leader)
    wait_until(lambda: len(leader.streams) >= 2 and len(leader.streams[1]) >= 1, what="the overdue stream replaced")
    assert [len(stream) for stream in leader.streams[:1]] == [2]
    assert (leader.streams[1][0].session_id, leader.streams[1][0].session_epoch) == (0, 0)


def test_a_leader_without_the_stream_is_fetched_with_unary_calls(fetcher_for: Callable[[FakeLeader], ReplicaFetcher]) -> None:
    old_leader = FakeLeader(streams=False)
    try:
        fetcher_for(old_leader)
        wait_until(lambda: len(old_leader.unary) >= 3, what="unary fetches")
        assert [(request.session_id, request.session_epoch) for request in old_leader.unary[:3]] == [(0, 0), (7, 1), (7, 2)]
    finally:
        old_leader.stop()


def test_stopping_the_fetcher_ends_its_stream(leader: FakeLeader, fetcher_for: Callable[[FakeLeader], ReplicaFetcher]) -> None:
    leader.held_streams = 1
    fetcher = fetcher_for(leader)
    wait_until(lambda: len(leader.streams) == 1 and len(leader.streams[0]) == 2, what="a fetch waiting on the stream")
    fetcher.stop()
    assert leader.ended.wait(10)
    assert len(leader.streams) == 1


# ---------------------------------------------------------------- the leader's servicer


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(Path(tmp_path_factory.mktemp("fetch-stream")))
    try:
        running.apply(leader=1, epoch=1)
        yield running
    finally:
        running.stop()


def _fetch(session_id: int, session_epoch: int, offset: int = 0) -> replication_pb2.ReplicaFetchRequest:
    partitions = [replication_pb2.ReplicaFetchPartition(topic=QUALIFIED, partition=0, fetch_offset=offset, current_leader_epoch=1)]
    return replication_pb2.ReplicaFetchRequest(
        replica_id=3, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=session_id, session_epoch=session_epoch, partitions=partitions
    )


def test_the_leader_answers_a_streams_fetches_in_order_within_one_session(cluster: ReplicatedCluster) -> None:
    assert cluster.produce(1, [b"a", b"b"]).error_code == ErrorCode.NO_ERROR
    stub = replication_pb2_grpc.ReplicationStub(cluster.nodes[1].channel)
    outgoing: queue.SimpleQueue[replication_pb2.ReplicaFetchRequest | None] = queue.SimpleQueue()
    answers = stub.ReplicaFetchStream(iter(outgoing.get, None), metadata=TOKEN, timeout=30)
    outgoing.put(_fetch(0, 0))
    full = next(answers)
    assert full.error_code == ErrorCode.NO_ERROR and full.session_id != 0
    assert [(item.partition, item.error_code, bool(item.records)) for item in full.partitions] == [(0, ErrorCode.NO_ERROR, True)]
    outgoing.put(_fetch(full.session_id, 5))  # a wrong epoch: refused in the answer, the stream goes on
    assert next(answers).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    outgoing.put(_fetch(full.session_id, 1, offset=2))
    assert next(answers).error_code == ErrorCode.NO_ERROR
    outgoing.put(None)
    assert list(answers) == []


def test_a_stream_without_the_internal_token_is_refused(cluster: ReplicatedCluster) -> None:
    stub = replication_pb2_grpc.ReplicationStub(cluster.nodes[1].channel)
    answers = stub.ReplicaFetchStream(iter([_fetch(0, 0)]), metadata=(("x-weir-internal-token", "wrong"),), timeout=30)
    with pytest.raises(grpc.RpcError) as refused:
        next(answers)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
