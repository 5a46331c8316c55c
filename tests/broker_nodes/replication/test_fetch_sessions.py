"""Fetch sessions for followers (KIP-227): the cache, the follower's bookkeeping, and a leader's
ReplicationManager answering full and incremental fetches in-process (no server, no thread but
one long poll)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot, ManagedTopic, PartitionAssignment
from broker_nodes.partition_waitlist import WakeSignal
from broker_nodes.replication.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    MAX_EPOCH,
    NO_SESSION,
    FetchSessionCache,
    FetchSessionIdNotFoundError,
    FollowerSession,
    InvalidFetchSessionEpochError,
    PartitionState,
    next_epoch,
)
from broker_nodes.replication.follower import FetcherSettings
from broker_nodes.replication.follower_wakes import FollowerFetchWake, high_watermark_moves
from broker_nodes.replication.manager import (
    HIGH_WATERMARK_LINGER_MS,
    ReplicaFetchAnswer,
    ReplicaFetchPartitionRequest,
    ReplicationManager,
    ReplicationSettings,
)
from broker_nodes.server.fetch_purgatory import FetchPurgatory
from broker_nodes.storage.log_config import LogConfig
from broker_nodes.storage.log_manager import LogManager
from tests.broker_nodes.server.helpers import batch

TOPIC = "tn-s.orders"
P0, P1 = (TOPIC, 0), (TOPIC, 1)


# ---------------------------------------------------------------------- the cache


def cache(clock: ManualClock, *, max_sessions: int = 10, idle_timeout_seconds: float = 60.0) -> FetchSessionCache:
    return FetchSessionCache(max_sessions=max_sessions, idle_timeout_seconds=idle_timeout_seconds, monotonic=clock.monotonic)


def test_a_session_takes_each_epoch_once_in_order() -> None:
    sessions = cache(ManualClock())
    session = sessions.open(2)
    assert session.session_id != NO_SESSION
    assert sessions.resume(2, session.session_id, 1)[0] is session
    assert sessions.resume(2, session.session_id, 2)[1] == 3  # generation: one per accepted fetch
    with pytest.raises(InvalidFetchSessionEpochError, match="epoch 2 in the request, 3 expected"):
        sessions.resume(2, session.session_id, 2)  # a fetch answered twice
    with pytest.raises(InvalidFetchSessionEpochError):
        sessions.resume(2, session.session_id, 5)  # a fetch lost on the way
    assert sessions.resume(2, session.session_id, 3)[0] is session


def test_unknown_and_other_followers_sessions_are_not_found() -> None:
    sessions = cache(ManualClock())
    session = sessions.open(2)
    with pytest.raises(FetchSessionIdNotFoundError):
        sessions.resume(3, session.session_id, 1)
    with pytest.raises(FetchSessionIdNotFoundError):
        sessions.resume(2, session.session_id + 1, 1)


def test_a_new_full_fetch_replaces_the_followers_session() -> None:
    sessions = cache(ManualClock())
    old = sessions.open(2)
    new = sessions.open(2)
    assert len(sessions) == 1 and new.session_id != old.session_id
    with pytest.raises(FetchSessionIdNotFoundError):
        sessions.resume(2, old.session_id, 1)


def test_idle_sessions_and_the_least_recently_used_beyond_the_cap_are_evicted() -> None:
    clock = ManualClock()
    sessions = cache(clock, max_sessions=2, idle_timeout_seconds=30.0)
    first, second = sessions.open(2), sessions.open(3)
    clock.advance(10_000)
    sessions.resume(2, first.session_id, 1)  # the first is now the most recently used
    fourth = sessions.open(4)  # over the cap: the second goes
    with pytest.raises(FetchSessionIdNotFoundError):
        sessions.resume(3, second.session_id, 1)
    clock.advance(25_000)
    sessions.resume(4, fourth.session_id, 1)
    clock.advance(6_000)
    assert sessions.evict_idle() == 1  # the first, unused for 31 s
    assert len(sessions) == 1
    with pytest.raises(FetchSessionIdNotFoundError):
        sessions.resume(2, first.session_id, 2)


def test_close_forgets_and_the_epoch_wraps_past_zero() -> None:
    sessions = cache(ManualClock())
    session = sessions.open(2)
    sessions.close(3, session.session_id)  # not its session: kept
    assert len(sessions) == 1
    sessions.close(2, session.session_id)
    assert len(sessions) == 0
    assert next_epoch(MAX_EPOCH) == 1 and next_epoch(INITIAL_EPOCH) == 1
    with pytest.raises(ValueError, match="max_sessions"):
        cache(ManualClock(), max_sessions=0)


def test_the_follower_names_everything_first_then_only_changes_and_forgotten_partitions() -> None:
    follower = FollowerSession()
    wanted = {P0: PartitionState(5, 1, 0), P1: PartitionState(7, 1, 0)}
    named, forgotten = follower.next_fetch(wanted)
    assert (dict(named), forgotten, follower.epoch) == (wanted, [], INITIAL_EPOCH)
    follower.answered(41, named, forgotten)
    assert (follower.session_id, follower.epoch) == (41, 1)
    assert follower.next_fetch(wanted) == ([], [])
    moved = {P0: PartitionState(9, 1, 0)}
    named, forgotten = follower.next_fetch(moved)
    assert (named, forgotten) == ([(P0, PartitionState(9, 1, 0))], [P1])
    follower.answered(41, named, forgotten)
    assert follower.epoch == 2 and follower.next_fetch(moved) == ([], [])
    follower.answered(99, [], [])  # another session than asked for: start over
    assert (follower.session_id, follower.epoch) == (NO_SESSION, INITIAL_EPOCH)
    assert dict(follower.next_fetch(moved)[0]) == moved
    follower.answered(NO_SESSION, [], [])  # a leader keeping no session: full fetches
    assert follower.session_id == NO_SESSION


# ---------------------------------------------------------------------- a leader's manager, in-process


@pytest.fixture
def leader(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ReplicationManager]:
    """Broker 1 leading partitions 0 and 1 (replicas 1, 2, 3; epoch 4); parametrize it indirectly with a high watermark linger in ms."""
    clock = ManualClock()
    logs = LogManager(tmp_path, clock=clock)
    for partition in (0, 1):
        logs.get_or_create_log(TOPIC, partition, LogConfig.default())
    manager = ReplicationManager(
        1,
        log_manager=logs,
        fetch_purgatory=FetchPurgatory(max_parked=8),
        clock=clock,
        internal_token="token",
        settings=ReplicationSettings(
            replica_lag_time_max_ms=10_000,
            fetcher=FetcherSettings(max_wait_ms=100, max_bytes=1 << 20, backoff_ms=50, channel_factory=lambda address: pytest.fail("no fetcher")),
            high_watermark_linger_ms=getattr(request, "param", HIGH_WATERMARK_LINGER_MS),
        ),
        min_insync_replicas=lambda topic: 1,
    )
    manager.apply(
        ClusterSnapshot(
            version=1,
            cluster_id="c",
            brokers=tuple(BrokerEndpoint(node_id, "127.0.0.1", 9000 + node_id) for node_id in (1, 2, 3)),
            topics={
                TOPIC: ManagedTopic(
                    "tn-s",
                    "orders",
                    "id",
                    {},
                    tuple(PartitionAssignment(partition, 1, 4, (1, 2, 3), (1, 2, 3)) for partition in (0, 1)),
                )
            },
        )
    )
    yield manager
    manager.shutdown()
    logs.shutdown()


def fetch(
    manager: ReplicationManager, replica: int, session_id: int, epoch: int, *partitions: tuple[int, int], forgotten=(), max_wait_ms: int = 0
) -> ReplicaFetchAnswer:
    requests = [ReplicaFetchPartitionRequest(TOPIC, partition, offset, 4, 0) for partition, offset in partitions]
    return manager.replica_fetch_in_session(
        replica, requests, session_id=session_id, session_epoch=epoch, forgotten=forgotten, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20
    )


def append(manager: ReplicationManager, partition: int, count: int) -> None:
    log = manager._log_manager.get_log(TOPIC, partition)
    assert log is not None
    records = batch([b"v"] * count)
    log.append_as_leader(records, 4)
    manager.after_leader_append(TOPIC, partition, log)
    manager._fetch_purgatory.notify_append(TOPIC, partition, len(records))  # as the produce path does


def answered(answer: ReplicaFetchAnswer) -> dict[int, tuple[int, int]]:
    """partition -> (record bytes, high watermark)."""
    return {result.partition: (len(result.records), result.high_watermark) for result in answer.partitions if result.error is None}


def test_full_then_incremental_fetches_answer_only_partitions_with_news(leader: ReplicationManager) -> None:
    full = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0))
    assert full.session_id != NO_SESSION and sorted(answered(full)) == [0, 1]
    session = full.session_id
    assert fetch(leader, 2, session, 1).partitions == []  # nothing named, nothing new
    append(leader, 0, 3)
    news = answered(fetch(leader, 2, session, 2))
    assert list(news) == [0] and news[0][0] > 0  # only partition 0, with its records
    # Replica 2 at the log end: partition 0's high watermark waits for replica 3, and replica 2
    # holds the one its records came with, so its next fetch has nothing to be answered.
    assert fetch(leader, 2, session, 3, (0, 3)).partitions == []
    assert fetch(leader, 2, session, 4).partitions == []
    # Replica 3 catches up in its own session: the high watermark moves, and 2 is told of it without naming anything.
    other = fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 3), (1, 0))
    assert answered(other)[0] == (0, 3)
    assert answered(fetch(leader, 2, session, 5)) == {0: (0, 3)}
    assert len(leader.fetch_sessions) == 2


def test_a_forgotten_partition_is_no_longer_answered(leader: ReplicationManager) -> None:
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0)).session_id
    assert fetch(leader, 2, session, 1, forgotten=[P1]).partitions == []
    append(leader, 1, 2)
    assert fetch(leader, 2, session, 2).partitions == []
    assert list(answered(fetch(leader, 2, session, 3, (1, 0)))) == [1]  # named again: answered


def test_a_refused_session_and_a_fetch_without_one(leader: ReplicationManager) -> None:
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0)).session_id
    with pytest.raises(InvalidFetchSessionEpochError):
        fetch(leader, 2, session, 7)
    with pytest.raises(FetchSessionIdNotFoundError):
        fetch(leader, 3, session, 1)
    sessionless = fetch(leader, 2, session, FINAL_EPOCH, (0, 0), (1, 0))
    assert sessionless.session_id == NO_SESSION and len(sessionless.partitions) == 2
    with pytest.raises(FetchSessionIdNotFoundError):
        fetch(leader, 2, session, 1)  # the final epoch closed it


def test_an_unknown_partition_in_a_session_is_answered_with_its_error(leader: ReplicationManager) -> None:
    answer = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0))
    requests = [ReplicaFetchPartitionRequest("tn-s.absent", 0, 0, 4, 0)]
    again = leader.replica_fetch_in_session(2, requests, session_id=answer.session_id, session_epoch=1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    assert [(result.topic, type(result.error).__name__) for result in again.partitions] == [("tn-s.absent", "NotLeaderOrFollowerError")]


def _park(leader: ReplicationManager, call: Callable[[], ReplicaFetchAnswer], answers: list[ReplicaFetchAnswer]) -> threading.Thread:
    """Run ``call`` on a thread and return once its long poll is parked (bounded wait)."""
    parked = threading.Thread(target=lambda: answers.append(call()))
    parked.start()
    pause = threading.Event()
    for _ in range(1000):
        if leader._fetch_purgatory.parked:
            break
        pause.wait(0.01)
    assert leader._fetch_purgatory.parked == 1, "the fetch answered instead of waiting"
    return parked


def test_a_full_fetch_with_nothing_new_waits_for_records_instead_of_spinning(leader: ReplicationManager) -> None:
    answers: list[ReplicaFetchAnswer] = []
    parked = _park(leader, lambda: fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0), max_wait_ms=60_000), answers)
    append(leader, 1, 2)
    parked.join(30)
    assert not parked.is_alive()
    assert answered(answers[0])[1][0] > 0 and sorted(answered(answers[0])) == [0, 1]  # full: every partition


def test_a_parked_session_fetch_answers_when_another_followers_fetch_moves_the_high_watermark(leader: ReplicationManager) -> None:
    append(leader, 0, 2)
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 2), (1, 0)).session_id
    answers: list[ReplicaFetchAnswer] = []
    parked = _park(leader, lambda: fetch(leader, 2, session, 1, max_wait_ms=60_000), answers)
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 2))  # replica 3 at the log end: the high watermark reaches 2
    parked.join(30)
    assert not parked.is_alive(), "the parked fetch did not answer the high watermark move"
    assert answered(answers[0]) == {0: (0, 2)}


@pytest.mark.parametrize("leader", [3_600_000], indirect=True)  # a linger no test outlasts: only records end the wait
def test_a_high_watermark_move_lingers_and_goes_out_with_the_records_that_follow(leader: ReplicationManager) -> None:
    append(leader, 0, 2)
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 2), (1, 0)).session_id  # replica 2 at the log end, high watermark 0
    answers: list[ReplicaFetchAnswer] = []
    parked = _park(leader, lambda: fetch(leader, 2, session, 1, max_wait_ms=3_600_000), answers)
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 2))  # replica 3 at the log end: the high watermark reaches 2
    append(leader, 1, 3)
    parked.join(30)
    assert not parked.is_alive(), "the lingering fetch did not answer the records"
    news = answered(answers[0])
    assert news[0] == (0, 2) and news[1][0] > 0  # partition 0's move went out with partition 1's records
    # What was sent is what the follower holds: at partition 1's log end it has nothing more to be told.
    assert fetch(leader, 2, session, 2, (1, 3)).partitions == []


def test_quiet_partitions_a_follower_does_not_name_keep_it_in_the_isr(leader: ReplicationManager) -> None:
    clock = leader._clock
    assert isinstance(clock, ManualClock)
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0)).session_id
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0))
    for epoch in range(1, 4):  # replica 2 keeps fetching, naming nothing; replica 3 falls silent
        clock.advance(6_000)
        assert fetch(leader, 2, session, epoch).partitions == []
    leader.shrink_isrs()  # 18 s since replica 3's last fetch, 6 s since replica 2's (replica.lag.time.max.ms 10 s)
    assert leader.isr(TOPIC, 0) == leader.isr(TOPIC, 1) == (1, 2)


def test_an_unchanged_partition_keeps_the_state_sent_and_is_not_named() -> None:
    follower = FollowerSession()
    named, forgotten = follower.next_fetch({P0: follower.state_of(P0, 5, 1, 0), P1: follower.state_of(P1, 7, 1, 0)})
    follower.answered(41, named, forgotten)
    unchanged = follower.state_of(P0, 5, 1, 0)
    assert unchanged is dict(named)[P0]  # no new state for a partition that did not move
    moved = follower.state_of(P1, 8, 1, 0)
    assert moved == PartitionState(8, 1, 0)
    assert follower.next_fetch({P0: unchanged, P1: moved}) == ([(P1, moved)], [])
    assert follower.state_of(P0, 5, 2, 0) == PartitionState(5, 2, 0)  # a new leader epoch is a change


def test_a_read_of_quiet_partitions_looks_up_no_log_while_their_leadership_lasts(leader: ReplicationManager, monkeypatch: pytest.MonkeyPatch) -> None:
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0)).session_id
    lookups: list[tuple[str, int]] = []
    original = leader._log_manager.get_log
    monkeypatch.setattr(leader._log_manager, "get_log", lambda topic, partition: lookups.append((topic, partition)) or original(topic, partition))
    assert fetch(leader, 2, session, 1).partitions == []
    assert lookups == []  # within UNCHANGED_RECORD_INTERVAL_MS of the full fetch: nothing to look up
    append(leader, 1, 2)
    assert list(answered(fetch(leader, 2, session, 2))) == [1]  # news is still seen without a lookup of the quiet partition
    assert P0 not in lookups


def test_a_new_leadership_is_seen_by_a_session_naming_nothing(leader: ReplicationManager) -> None:
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 0), (1, 0)).session_id
    leader.apply(
        ClusterSnapshot(
            version=2,
            cluster_id="c",
            brokers=tuple(BrokerEndpoint(node_id, "127.0.0.1", 9000 + node_id) for node_id in (1, 2, 3)),
            topics={TOPIC: ManagedTopic("tn-s", "orders", "id", {}, tuple(PartitionAssignment(partition, 1, 5, (1, 2, 3), (1, 2, 3)) for partition in (0, 1)))},
        )
    )
    answer = fetch(leader, 2, session, 1)  # the follower still at epoch 4: each partition answers that it is fenced
    assert sorted((result.partition, type(result.error).__name__) for result in answer.partitions) == [
        (0, "FencedLeaderEpochError"),
        (1, "FencedLeaderEpochError"),
    ]


def test_a_high_watermark_move_wakes_the_acks_waiters_before_the_parked_fetches(leader: ReplicationManager, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    on_high_watermark, wake_partition = leader.acks.on_high_watermark, leader._fetch_purgatory.wake_partition
    monkeypatch.setattr(leader.acks, "on_high_watermark", lambda *args: (order.append("acks"), on_high_watermark(*args))[1])
    monkeypatch.setattr(leader._fetch_purgatory, "wake_partition", lambda *args: (order.append("fetches"), wake_partition(*args))[1])
    append(leader, 0, 2)
    fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 2))
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 2))  # both followers at the log end: the high watermark reaches 2
    assert leader._log_manager.get_log(TOPIC, 0).high_watermark == 2  # type: ignore[union-attr]
    assert order == ["acks", "fetches"]


@pytest.mark.parametrize("leader", [3_600_000], indirect=True)  # a linger no test outlasts: only records end the wait
def test_a_parked_fetch_reads_each_partition_again_only_when_it_changed(leader: ReplicationManager, monkeypatch: pytest.MonkeyPatch) -> None:
    append(leader, 0, 2)
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 2), (1, 0)).session_id  # replica 2 at the log end, high watermark 0
    reads: list[int] = []  # partitions replica 2's fetches read
    read_one = leader._read_one_for_follower
    monkeypatch.setattr(
        leader,
        "_read_one_for_follower",
        lambda replica_id, request, max_bytes: (replica_id != 2 or reads.append(request.partition), read_one(replica_id, request, max_bytes))[1],
    )
    answers: list[ReplicaFetchAnswer] = []
    parked = _park(leader, lambda: fetch(leader, 2, session, 1, max_wait_ms=3_600_000), answers)
    assert reads == []  # nothing new on either partition: parked without reading them
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 2))  # replica 3 at the log end: the high watermark reaches 2
    append(leader, 1, 3)
    parked.join(30)
    assert not parked.is_alive(), "the parked fetch did not answer the records"
    assert answered(answers[0])[0] == (0, 2) and answered(answers[0])[1][0] > 0
    # Partition 0 once for its move and partition 1 once for its records (whether the move was read at once or with the records).
    assert sorted(reads) == [0, 1]


def test_a_high_watermark_move_alone_is_answered_after_the_linger_without_waking_the_fetch_at_the_move(
    leader: ReplicationManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    woken: list[bool] = []  # how each of replica 2's waits ended: True for a move that waited out the linger
    waiting = threading.Event()
    wait = FollowerFetchWake.wait

    def recorded_wait(self: FollowerFetchWake, signal: WakeSignal, remaining: Callable[[], float]) -> bool:
        waiting.set()
        woken.append(wait(self, signal, remaining))
        return woken[-1]

    monkeypatch.setattr(FollowerFetchWake, "wait", recorded_wait)
    append(leader, 0, 2)
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 2), (1, 0)).session_id
    answers: list[ReplicaFetchAnswer] = []
    parked = _park(leader, lambda: fetch(leader, 2, session, 1, max_wait_ms=3_600_000), answers)
    assert waiting.wait(30), "the parked fetch did not wait"
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 2))  # replica 3 at the log end: the high watermark reaches 2
    parked.join(30)
    assert not parked.is_alive(), "the parked fetch did not answer the high watermark move"
    assert answered(answers[0]) == {0: (0, 2)}
    assert woken == [True]  # one wait, ended by the linger's slice with the move pending: not woken at the move, nor lingering again


def test_only_unmarked_wake_ups_wake_a_follower_fetch() -> None:
    wake = FollowerFetchWake(3600.0, lingering=False)
    signal = WakeSignal()
    signal.subscribe(wake.on_signal)
    with high_watermark_moves():
        signal.set()  # a move: the signal is set, the fetch's thread is not woken
    assert signal.is_set() and not wake._event.is_set()
    signal.set()  # records or an error
    assert wake._event.is_set()
    assert wake.wait(signal, lambda: 3600.0) is False  # woken: read again, lingering as usual after a move


@pytest.mark.parametrize("leader", [0], indirect=True)  # no linger
def test_without_a_linger_a_parked_fetch_answers_a_high_watermark_move_at_once(leader: ReplicationManager) -> None:
    append(leader, 0, 2)
    session = fetch(leader, 2, NO_SESSION, INITIAL_EPOCH, (0, 2), (1, 0)).session_id
    answers: list[ReplicaFetchAnswer] = []
    parked = _park(leader, lambda: fetch(leader, 2, session, 1, max_wait_ms=3_600_000), answers)
    fetch(leader, 3, NO_SESSION, INITIAL_EPOCH, (0, 2))  # replica 3 at the log end: the high watermark reaches 2
    parked.join(30)
    assert not parked.is_alive(), "the parked fetch did not answer the high watermark move"
    assert answered(answers[0]) == {0: (0, 2)}
