"""The SDK's transactional Producer against a real broker process, as confluent-kafka's behaves.

Commit makes records visible to read_committed consumers, abort hides them, a second producer
of the same transactional.id fences the first (fatal), calls out of order raise _STATE, and a
transaction left open past transaction.timeout.ms is aborted by its coordinator (the late
commit is fenced, fatal, as librdkafka reports it).
"""

from __future__ import annotations

import pytest

from tests.support.ports import free_port
from tests.weir.sdk_support import assigned, consume_all, create_topic, wait_for
from weir import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from weir.group_metadata import ConsumerGroupMetadata

TOPIC = "payments"


def transactional_producer(address: str, transactional_id: str = "payments-app", **config: object) -> Producer:
    return Producer({"bootstrap.servers": address, "transactional.id": transactional_id, "linger.ms": 5, **config})


def read_committed(address: str, expected: int, partitions: int = 2, **config: object) -> list[bytes]:
    """Every record a read_committed consumer reads from the start (``expected`` bounds the wait; more is read if there)."""
    consumer = assigned(Consumer({"bootstrap.servers": address, "enable.partition.eof": True, **config}), TOPIC, partitions, OFFSET_BEGINNING)
    try:
        values = [message.value() for message in consume_all(consumer, expected, timeout=10)]
        extra = consumer.consume(100, timeout=0.5)  # anything beyond what was expected would show here
        values += [message.value() for message in extra if message.error() is None]
        return sorted(values)
    finally:
        consumer.close()


def test_commit_makes_records_visible_and_abort_hides_them(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2)
    reports: list[KafkaError | None] = []
    producer = transactional_producer(broker.address, on_delivery=lambda error, message: reports.append(error))
    producer.init_transactions(30)

    producer.begin_transaction()
    for index in range(10):
        producer.produce(TOPIC, value=f"committed-{index}", key=str(index))
    producer.commit_transaction(30)
    assert reports == [None] * 10

    producer.begin_transaction()
    for index in range(5):
        producer.produce(TOPIC, value=f"aborted-{index}", key=str(index))
    producer.flush(30)  # sent, so the abort writes markers the consumers must honour
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(TOPIC, value="committed-last", partition=1)
    producer.commit_transaction(30)
    producer.close()

    expected = sorted([f"committed-{index}".encode() for index in range(10)] + [b"committed-last"])
    assert read_committed(broker.address, len(expected)) == expected
    uncommitted = read_committed(broker.address, 16, **{"isolation.level": "read_uncommitted"})
    assert len(uncommitted) == 16 and b"aborted-0" in uncommitted


def test_abort_purges_unsent_records_with_purge_queue(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2)
    reports: list[KafkaError | None] = []
    producer = transactional_producer(broker.address, **{"linger.ms": 60_000, "on_delivery": lambda error, message: reports.append(error)})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"never-sent", partition=0)
    producer.abort_transaction(30)
    assert [error.code() for error in reports if error is not None] == [KafkaError._PURGE_QUEUE]
    producer.begin_transaction()  # the producer goes on with the next transaction
    producer.produce(TOPIC, value=b"after-abort", partition=0)
    producer.commit_transaction(30)
    producer.close()
    assert read_committed(broker.address, 1) == [b"after-abort"]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2)
    zombie = transactional_producer(broker.address)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(TOPIC, value=b"zombie", partition=0)
    zombie.flush(30)

    successor = transactional_producer(broker.address)
    successor.init_transactions(30)  # aborts the zombie's open transaction
    successor.begin_transaction()
    successor.produce(TOPIC, value=b"successor", partition=0)
    successor.commit_transaction(30)

    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() and not error.txn_requires_abort() and error.code() == KafkaError._FENCED
    with pytest.raises(KafkaException) as again:
        zombie.begin_transaction()
    assert again.value.args[0].fatal()
    zombie.close(5)
    successor.close()
    assert read_committed(broker.address, 1) == [b"successor"]


def test_calls_out_of_order_raise_state(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2)
    producer = transactional_producer(broker.address)
    for call in (producer.begin_transaction, producer.commit_transaction, producer.abort_transaction):
        with pytest.raises(KafkaException) as raised:
            call()
        assert raised.value.args[0].code() == KafkaError._STATE
    producer.init_transactions(30)
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(30)
    assert raised.value.args[0].code() == KafkaError._STATE
    with pytest.raises(KafkaException) as raised:
        producer.produce(TOPIC, value=b"outside")  # a transactional producer writes only inside a transaction
    assert raised.value.args[0].code() == KafkaError._STATE
    with pytest.raises(KafkaException) as raised:
        producer.commit_transaction(5)
    assert raised.value.args[0].code() == KafkaError._STATE
    producer.begin_transaction()
    with pytest.raises(KafkaException) as raised:
        producer.begin_transaction()
    assert raised.value.args[0].code() == KafkaError._STATE
    producer.commit_transaction(30)  # an empty transaction ends locally
    producer.close()

    plain = Producer({"bootstrap.servers": broker.address})
    with pytest.raises(KafkaException) as raised:
        plain.init_transactions(5)
    assert raised.value.args[0].code() == KafkaError._NOT_CONFIGURED
    plain.close()


def test_transactional_id_requires_idempotence() -> None:
    with pytest.raises(KafkaException) as raised:
        Producer({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t", "enable.idempotence": False})
    assert raised.value.args[0].code() == KafkaError._INVALID_ARG
    with pytest.raises(KafkaException):
        Producer({"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t", "acks": 1})


def test_a_transaction_open_past_its_timeout_is_aborted_and_the_late_commit_fails(broker_factory) -> None:
    broker = broker_factory(configs={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
    create_topic(broker.address, TOPIC, partitions=2)
    producer = transactional_producer(broker.address, **{"transaction.timeout.ms": 1000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"stalled", partition=0)
    producer.flush(30)
    consumer = assigned(Consumer({"bootstrap.servers": broker.address, "enable.partition.eof": True}), TOPIC, 2, OFFSET_BEGINNING)
    # The coordinator aborts the stalled transaction: its ABORT marker releases read_committed readers.
    assert wait_for(lambda: consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)[1] >= 2, timeout=20)
    consumer.close()
    with pytest.raises(KafkaException) as raised:
        producer.commit_transaction(30)
    # The coordinator bumped the epoch when it aborted: the producer is fenced, a fatal error
    # as librdkafka reports it (only a new producer instance can go on).
    error = raised.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    producer.close(5)
    assert read_committed(broker.address, 0) == []


def test_send_offsets_needs_a_transaction_and_consumer_group_metadata(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2)
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "payments-readers"})
    metadata = consumer.consumer_group_metadata()
    assert metadata == ConsumerGroupMetadata("payments-readers", -1, "", None)
    producer = transactional_producer(broker.address)
    producer.init_transactions(30)
    offsets = [TopicPartition(TOPIC, 0, 5)]
    with pytest.raises(KafkaException) as raised:
        producer.send_offsets_to_transaction(offsets, metadata, 10)
    assert raised.value.args[0].code() == KafkaError._STATE
    producer.begin_transaction()
    with pytest.raises(KafkaException) as raised:
        producer.send_offsets_to_transaction(offsets, "not metadata", 10)  # type: ignore[arg-type]
    assert raised.value.args[0].code() == KafkaError._INVALID_ARG
    producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, -1001)], metadata, 10)  # no valid offset: nothing to do
    producer.abort_transaction(30)
    producer.close()
    consumer.close()
    with pytest.raises(KafkaException) as raised:
        Consumer({"bootstrap.servers": broker.address}).consumer_group_metadata()
    assert raised.value.args[0].code() == KafkaError._INVALID_ARG


def test_a_failed_produce_makes_the_transaction_abortable_and_the_producer_goes_on_after_abort(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2, config={"max.message.bytes": "2000"})
    reports: list[KafkaError | None] = []
    producer = transactional_producer(broker.address, on_delivery=lambda error, message: reports.append(error))
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"small", partition=0)
    producer.produce(TOPIC, value=b"x" * 10_000, partition=1)  # the broker refuses it: MESSAGE_TOO_LARGE
    with pytest.raises(KafkaException) as raised:
        producer.commit_transaction(30)
    error = raised.value.args[0]
    assert error.txn_requires_abort() and not error.fatal() and not error.retriable(), error
    assert error.code() == KafkaError.MESSAGE_TOO_LARGE
    with pytest.raises(KafkaException) as refused:
        producer.produce(TOPIC, value=b"more", partition=0)  # nothing more until the abort
    assert refused.value.args[0].txn_requires_abort()
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(TOPIC, value=b"next", partition=0)
    producer.commit_transaction(30)
    producer.close()
    assert KafkaError.MESSAGE_TOO_LARGE in [error.code() for error in reports if error is not None]
    assert read_committed(broker.address, 1) == [b"next"]


def test_init_transactions_without_a_reachable_broker_times_out_retriably() -> None:
    producer = transactional_producer(f"127.0.0.1:{free_port()}")
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(1.0)
    error = raised.value.args[0]
    assert error.code() == KafkaError._TIMED_OUT and error.retriable() and not error.fatal()
    producer.close(1)


def test_closing_a_producer_whose_transaction_failed_purges_what_it_holds(broker) -> None:
    create_topic(broker.address, TOPIC, partitions=2, config={"max.message.bytes": "2000"})
    reports: list[KafkaError | None] = []
    config = {"linger.ms": 60_000, "batch.size": 1000, "on_delivery": lambda error, message: reports.append(error)}
    producer = transactional_producer(broker.address, **config)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"held", partition=0)  # lingers: still in the producer when the transaction fails
    producer.produce(TOPIC, value=b"x" * 10_000, partition=1)  # a full batch, sent at once and refused (MESSAGE_TOO_LARGE)
    assert wait_for(lambda: producer.poll(0.1) > 0 or bool(reports), timeout=20)
    assert producer.close(10) == 0  # not the 60 s of delivery.timeout.ms: the held record is purged
    assert sorted(error.code() for error in reports if error is not None) == sorted([KafkaError.MESSAGE_TOO_LARGE, KafkaError._PURGE_QUEUE])


def test_a_partition_joins_the_transaction_at_its_first_record_before_the_batch_is_sent(broker) -> None:
    """As librdkafka: AddPartitionsToTxn goes out when a partition gets its first record, not once its batch
    leaves the accumulator (here linger.ms holds it), so it overlaps the application's produce() calls."""
    from weir.admin import AdminClient

    create_topic(broker.address, TOPIC, partitions=2)
    producer = transactional_producer(broker.address, "early-join", **{"linger.ms": 60_000})
    admin = AdminClient({"bootstrap.servers": broker.address})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(TOPIC, value=b"held-by-linger", partition=1)

        def described() -> object:
            return admin.describe_transactions(["early-join"])["early-join"].result(10)

        assert wait_for(lambda: getattr(described(), "state", "") == "Ongoing", timeout=15), described()
        description = described()
        assert [(tp.topic, tp.partition) for tp in description.topic_partitions] == [(TOPIC, 1)]
        assert len(producer) == 1  # the record itself is still in its open batch
        producer.commit_transaction(30)  # the flush sends it; no second AddPartitionsToTxn is needed
    finally:
        producer.close()
        admin.close()
    assert read_committed(broker.address, 1) == [b"held-by-linger"]


def test_an_abort_right_after_the_first_record_ends_the_transaction_its_partition_joined(broker) -> None:
    """produce() sends AddPartitionsToTxn itself; abort_transaction() called at once waits for its answer and ends the
    transaction at the coordinator (EndTxn), instead of ending it locally and leaving it open there until its timeout."""
    from weir.admin import AdminClient

    create_topic(broker.address, TOPIC, partitions=2)
    producer = transactional_producer(broker.address, "abort-at-once", **{"linger.ms": 60_000})
    admin = AdminClient({"bootstrap.servers": broker.address})
    try:
        producer.init_transactions(30)
        for round_number in range(3):
            _, epoch = producer._transactions.producer()
            producer.begin_transaction()
            producer.produce(TOPIC, value=b"aborted", partition=round_number % 2)
            producer.abort_transaction(30)
            # EndTxn went out (it bumps the epoch), so the coordinator holds no open transaction of the id.
            assert producer._transactions.producer()[1] == epoch + 1, round_number
            state = admin.describe_transactions(["abort-at-once"])["abort-at-once"].result(10).state
            assert state in ("PrepareAbort", "CompleteAbort"), (round_number, state)
        producer.begin_transaction()
        producer.produce(TOPIC, value=b"committed", partition=0)
        producer.commit_transaction(30)
    finally:
        producer.close()
        admin.close()
    assert read_committed(broker.address, 1) == [b"committed"]
