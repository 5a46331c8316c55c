import pytest

from broker_nodes.producer_ids import (
    MAX_PRODUCER_EPOCH,
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
