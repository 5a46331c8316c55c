"""The offset store coordinates only the offsets partitions it leads, loading each when its leadership begins.

A standalone broker provides the logs; a second OffsetStore over them follows leaderships
given to it, with loads run by a manual executor so each state can be observed.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.offset_store import (
    OFFSETS_TOPIC,
    CoordinatorLoadingError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    OffsetCommitEntry,
    OffsetStore,
)
from broker_nodes.server.broker import Broker

GROUP = "billing"


class ManualExecutor(Executor):
    """Queues submitted calls; ``run_all`` runs them in the test's thread."""

    def __init__(self) -> None:
        self.queued: list[tuple[Callable[..., object], tuple[object, ...]]] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.queued.append((fn, args))
        return Future()

    def run_all(self) -> None:
        queued, self.queued = self.queued, []
        for fn, args in queued:
            fn(*args)


@pytest.fixture
def broker(tmp_path):
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=4"]), clock=ManualClock())
    broker.start()
    broker.topic_admin.create_topic("orders", 1, 1, {})
    yield broker
    broker.shutdown()


@pytest.fixture
def loader() -> ManualExecutor:
    return ManualExecutor()


@pytest.fixture
def store(broker, loader):
    store = OffsetStore(broker.replica_manager, broker.registry, broker.clock, metadata_max_bytes=4096, commit_timeout_ms=1000, loader=loader)
    yield store
    store.shutdown()


def other_group(store: OffsetStore) -> str:
    """A group whose offsets partition differs from GROUP's."""
    return next(name for name in (f"group-{index}" for index in range(100)) if store.partition_for(name) != store.partition_for(GROUP))


def test_new_leadership_answers_load_in_progress_until_loaded_from_the_log(broker, store, loader) -> None:
    assert broker.offset_store.commit(GROUP, "", [OffsetCommitEntry("orders", 0, 42, -1, "")]) == [None]
    partition = store.partition_for(GROUP)
    store.follow_leadership({partition: 5})
    with pytest.raises(CoordinatorLoadingError, match="'billing'"):
        store.fetch(GROUP, None)
    with pytest.raises(CoordinatorLoadingError):
        store.commit(GROUP, "", [OffsetCommitEntry("orders", 0, 1, -1, "")])
    loader.run_all()
    assert [(topic, value.offset) for topic, _, value in store.fetch(GROUP, None)] == [("orders", 42)]
    assert store.is_loaded(partition)


def test_group_of_a_partition_led_elsewhere_is_not_coordinator(store, loader) -> None:
    store.follow_leadership({store.partition_for(GROUP): 1})
    loader.run_all()
    with pytest.raises(NotCoordinatorError, match=f"partition {store.partition_for(other_group(store))} of {OFFSETS_TOPIC}"):
        store.fetch(other_group(store), None)


def test_losing_leadership_drops_the_partition_and_a_higher_epoch_reloads(broker, store, loader) -> None:
    partition = store.partition_for(GROUP)
    store.follow_leadership({partition: 1})
    loader.run_all()
    store.follow_leadership({})
    with pytest.raises(NotCoordinatorError):
        store.fetch(GROUP, None)

    store.follow_leadership({partition: 2})
    loader.run_all()
    store.follow_leadership({partition: 2})  # the same leadership again: nothing to load
    assert loader.queued == [] and store.is_loaded(partition)
    store.follow_leadership({partition: 3})
    assert not store.is_loaded(partition) and len(loader.queued) == 1


def test_load_abandoned_when_leadership_ends_before_it_runs(store, loader) -> None:
    partition = store.partition_for(GROUP)
    store.follow_leadership({partition: 1})
    store.follow_leadership({})
    loader.run_all()
    assert not store.is_loaded(partition)
    with pytest.raises(NotCoordinatorError):
        store.fetch(GROUP, None)


def test_without_an_offsets_topic_no_coordinator_is_available(tmp_path) -> None:
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=[]), clock=ManualClock())
    store = OffsetStore(broker.replica_manager, broker.registry, broker.clock, metadata_max_bytes=4096, commit_timeout_ms=1000, loader=ManualExecutor())
    store.follow_leadership({0: 1})
    with pytest.raises(CoordinatorNotAvailableError, match=f"{OFFSETS_TOPIC} does not exist yet"):
        store.commit(GROUP, "", [])
    store.shutdown()


def test_expiry_runs_only_on_loaded_partitions_this_broker_leads(broker, store, loader) -> None:
    store.follow_leadership({store.partition_for(GROUP): 1})
    loader.run_all()
    assert store.commit(GROUP, "", [OffsetCommitEntry("orders", 0, 7, -1, "")]) == [None]
    assert broker.offset_store.commit(other_group(store), "", [OffsetCommitEntry("orders", 0, 8, -1, "")]) == [None]
    broker.clock.advance(10 * 60_000)
    assert store.expire(60_000) == 1  # only GROUP's commit: the other group's partition is not led by ``store``
    assert store.fetch(GROUP, None) == []
