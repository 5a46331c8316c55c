import pytest

from broker_nodes.producer_ids import (
    MAX_PRODUCER_EPOCH,
    NODE_ID_SPACE_BITS,
    InvalidProducerIdMappingError,
    ProducerIdManager,
    TransactionsUnsupportedError,
)


def test_ids_are_unique_and_start_at_zero(tmp_path):
    manager = ProducerIdManager(tmp_path, block_size=10)
    ids = [manager.init_producer_id().producer_id for _ in range(25)]
    assert ids == list(range(25))


def test_restart_never_reuses_an_id(tmp_path):
    first = ProducerIdManager(tmp_path, block_size=10)
    handed_out = {first.allocate() for _ in range(3)}
    second = ProducerIdManager(tmp_path, block_size=10)
    assert second.allocate() not in handed_out
    assert second.allocate() >= 10


def test_reinitialising_producer_gets_the_next_epoch(tmp_path):
    manager = ProducerIdManager(tmp_path)
    first = manager.init_producer_id()
    again = manager.init_producer_id(producer_id=first.producer_id, producer_epoch=first.epoch)
    assert (again.producer_id, again.epoch) == (first.producer_id, 1)


def test_exhausted_epoch_gets_a_new_id(tmp_path):
    manager = ProducerIdManager(tmp_path)
    first = manager.init_producer_id()
    again = manager.init_producer_id(producer_id=first.producer_id, producer_epoch=MAX_PRODUCER_EPOCH)
    assert again.producer_id != first.producer_id
    assert again.epoch == 0


def test_unknown_producer_id_is_refused(tmp_path):
    with pytest.raises(InvalidProducerIdMappingError):
        ProducerIdManager(tmp_path).init_producer_id(producer_id=12345, producer_epoch=0)


def test_transactional_id_is_refused(tmp_path):
    with pytest.raises(TransactionsUnsupportedError):
        ProducerIdManager(tmp_path).init_producer_id(transactional_id="tx-1")


def test_brokers_hand_out_ids_from_disjoint_ranges(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    node_1 = ProducerIdManager(tmp_path / "1", node_id=1, block_size=10)
    node_2 = ProducerIdManager(tmp_path / "2", node_id=2, block_size=10)
    ids_1 = {node_1.allocate() for _ in range(25)}
    ids_2 = {node_2.allocate() for _ in range(25)}
    assert not ids_1 & ids_2
    assert min(ids_1) == 1 << NODE_ID_SPACE_BITS and min(ids_2) == 2 << NODE_ID_SPACE_BITS


def test_a_producer_re_initialises_its_id_through_another_broker(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    first = ProducerIdManager(tmp_path / "1", node_id=1).init_producer_id()
    other = ProducerIdManager(tmp_path / "2", node_id=2)
    again = other.init_producer_id(producer_id=first.producer_id, producer_epoch=first.epoch)
    assert (again.producer_id, again.epoch) == (first.producer_id, 1)
    # An id of the broker's own range that it never handed out stays refused.
    with pytest.raises(InvalidProducerIdMappingError):
        other.init_producer_id(producer_id=(2 << NODE_ID_SPACE_BITS) + 5, producer_epoch=0)


def test_a_counter_written_before_ranges_existed_moves_into_the_nodes_range(tmp_path):
    (tmp_path / "producer-id-block").write_text("1000\n")
    manager = ProducerIdManager(tmp_path, node_id=3, block_size=10)
    assert manager.allocate() == 3 << NODE_ID_SPACE_BITS
