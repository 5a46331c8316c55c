"""The data handlers against a real in-process broker: Metadata, Produce, Fetch, ListOffsets,
OffsetForLeaderEpoch and InitProducerId through Kafka's messages, every message round-tripped
through kio's codecs (see admin_calls)."""

from __future__ import annotations

import datetime
import uuid

import pytest

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build
from broker_nodes.security.access import CallContext, CallerKind, anonymous_context
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, brokers
from tests.broker_nodes.security.managed_cluster import topic as managed_topic
from tests.kafka_protocol.admin_calls import call_handler, request_module, round_trip
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode
from weir.records import COMPRESSION_GZIP, build_batch, iter_records

PRODUCE, FETCH, LIST_OFFSETS, METADATA, INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_PRODUCERS = 0, 1, 2, 3, 22, 23, 61
TIMEOUT = datetime.timedelta(seconds=5)
UNKNOWN_TOPIC_ID = 100  # Kafka's code for a topic id the broker does not know
FETCH_SESSION_ID_NOT_FOUND = 70  # Kafka's code; weir.errors has no name for it (the SDK keeps no fetch sessions)
ANONYMOUS = anonymous_context("127.0.0.1")
TENANT_TOPIC = "tn-a~orders"  # stored name of tenant tn-a's topic "orders"
OTHER_TENANT_TOPIC = "tn-b~secrets"
OTHER_BROKER_KAFKA_PORT = 19092


@pytest.fixture
def broker(tmp_path):
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "num.partitions": "2", "auto.create.topics.enable": "true"}).start()
    admin = server.broker.topic_admin
    admin.create_topic("events", 2, 1, {})
    yield server.broker
    server.stop()


@pytest.fixture
def managed(tmp_path):
    """A broker given tenants' topics by the control plane (tn-a's "orders", tn-b's "secrets"; tn-a's "elsewhere" led by broker 2), leader epoch 3."""
    server = SecuredBroker(tmp_path / "managed").start()
    server.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=[*brokers((1, server.port)), broker_pb2.BrokerNode(node_id=2, host="127.0.0.2", port=1, kafka_port=OTHER_BROKER_KAFKA_PORT)],
            topics=[managed_topic("tn-a", "orders", partitions=2), managed_topic("tn-b", "secrets"), managed_topic("tn-a", "elsewhere", leaders=[2])],
        ),
        metadata=INTERNAL,
    )
    yield server
    server.stop()


def tenant_client(*operations: Operation, topic: str = "orders") -> CallContext:
    acls = tuple(AclEntry("User:sa-1", ResourceType.TOPIC, topic, PatternType.LITERAL, operation, Permission.ALLOW) for operation in operations)
    return CallContext("tn-a", "User:sa-1", "127.0.0.1", CallerKind.CLIENT, acls)


def batch(*values: bytes, codec: int = 0) -> bytes:
    return build_batch([(1_700_000_000_000 + index, b"k%d" % index, value, [("h", b"v")]) for index, value in enumerate(values)], codec)


def produce(broker, topic, partition, records, *, version=9, acks=-1, call=ANONYMOUS):
    schema = request_module(PRODUCE, version)
    request = schema.ProduceRequest(
        acks=acks,
        timeout=TIMEOUT,
        topic_data=(schema.TopicProduceData(name=topic, partition_data=(schema.PartitionProduceData(index=partition, records=records),)),),
    )
    if acks == 0:
        registration = api.registration(PRODUCE)
        listener = api.KafkaListener(node_id=broker.config.node_id, host="127.0.0.1", port=9092)
        context = api.KafkaRequestContext(broker, call, PRODUCE, version, correlation_id=1, client_id="test", listener=listener)
        return registration.handler(context, round_trip(request))
    return call_handler(broker, call, PRODUCE, version, request).responses[0].partition_responses[0]


def fetch(
    broker, topic, partition, offset, *, version=12, call=ANONYMOUS, max_wait_ms=0, current_leader_epoch=-1, session_id=0, isolation_level=0, topic_id=None
):
    schema = request_module(FETCH, version)
    fields = {"current_leader_epoch": current_leader_epoch} if version >= 9 else {}
    request = schema.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=isolation_level,
        session_id=session_id,
        topics=(
            build(
                schema.FetchTopic,
                topic=topic,
                topic_id=topic_id,
                partitions=(schema.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20, **fields),),
            ),
        ),
        forgotten_topics_data=(),
    )
    return call_handler(broker, call, FETCH, version, request)


def metadata(broker, names, *, version=12, call=ANONYMOUS, operations=False, ids=(), auto_create=False):
    schema = request_module(METADATA, version)
    topics = None if names is None else tuple(build(schema.MetadataRequestTopic, name=name, topic_id=None) for name in names)
    topics = topics if not ids else (*(topics or ()), *(build(schema.MetadataRequestTopic, name=None, topic_id=topic_id) for topic_id in ids))
    fields = {"include_topic_authorized_operations": operations} if version >= 8 else {}
    if 8 <= version <= 10:
        fields["include_cluster_authorized_operations"] = False
    request = schema.MetadataRequest(topics=topics, allow_auto_topic_creation=auto_create, **fields) if version >= 4 else schema.MetadataRequest(topics=topics)
    return call_handler(broker, call, METADATA, version, request)


def list_offset(broker, topic, partition, timestamp, *, version=8, call=ANONYMOUS, current_leader_epoch=-1, isolation_level=0):
    schema = request_module(LIST_OFFSETS, version)
    request = build(
        schema.ListOffsetsRequest,
        replica_id=-1,
        isolation_level=isolation_level,
        topics=(
            schema.ListOffsetsTopic(
                name=topic,
                partitions=(build(schema.ListOffsetsPartition, partition_index=partition, timestamp=timestamp, current_leader_epoch=current_leader_epoch),),
            ),
        ),
    )
    return call_handler(broker, call, LIST_OFFSETS, version, request).topics[0].partitions[0]


@pytest.mark.parametrize("version", [3, 7, 9, 11])
def test_produce_then_fetch_returns_the_stored_batch_byte_for_byte(broker, version):
    records = batch(b"one", b"two", codec=COMPRESSION_GZIP)
    answer = produce(broker, "events", 1, records, version=version)
    assert answer.error_code == ErrorCode.NO_ERROR and answer.base_offset == 0
    fetched = fetch(broker, "events", 1, 0)
    assert fetched.session_id == 0 and fetched.error_code == ErrorCode.NO_ERROR
    partition = fetched.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR and partition.high_watermark == 2 and partition.last_stable_offset == 2
    stored = bytes(partition.records)
    assert stored[61:] == records[61:]  # past the header fields the broker sets (base offset, leader epoch) and the CRC-covered part
    assert [(record.key, record.value) for record in iter_records(stored)] == [(b"k0", b"one"), (b"k1", b"two")]


def test_acks_zero_appends_and_sends_no_response(broker):
    assert produce(broker, "events", 0, batch(b"x"), acks=0) is None
    assert list_offset(broker, "events", 0, -1).offset == 1


def test_a_bad_batch_and_an_unknown_partition_are_answered_per_partition(broker):
    assert produce(broker, "events", 0, b"\x00" * 70).error_code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD)
    assert produce(broker, "events", 9, batch(b"x")).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert fetch(broker, "events", 0, 5).responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_fetch_checks_the_leader_epoch_and_refuses_unknown_sessions(broker):
    assert fetch(broker, "events", 0, 0, current_leader_epoch=0).responses[0].partitions[0].error_code == ErrorCode.NO_ERROR
    assert fetch(broker, "events", 0, 0, current_leader_epoch=5).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert fetch(broker, "events", 0, 0, session_id=42).error_code == FETCH_SESSION_ID_NOT_FOUND
    assert fetch(broker, "events", 0, 0, isolation_level=1).responses[0].partitions[0].aborted_transactions == ()


def test_fetch_long_polls_until_the_wait_ends(broker):
    started = datetime.datetime.now()
    partition = fetch(broker, "events", 0, 0, max_wait_ms=300).responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR and not partition.records
    assert datetime.datetime.now() - started >= datetime.timedelta(milliseconds=250)


@pytest.mark.parametrize("version", [1, 4, 8, 10, 12])
def test_metadata_lists_topics_partitions_and_this_broker(broker, version):
    answer = metadata(broker, ["events"], version=version)
    assert [(node.node_id, node.host, node.port) for node in answer.brokers] == [(broker.config.node_id, "127.0.0.1", 9092)]
    assert answer.controller_id == broker.config.node_id
    topic = answer.topics[0]
    assert topic.name == "events" and topic.error_code == ErrorCode.NO_ERROR
    assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in topic.partitions] == [
        (0, broker.config.node_id, (broker.config.node_id,), (broker.config.node_id,)),
        (1, broker.config.node_id, (broker.config.node_id,), (broker.config.node_id,)),
    ]
    if version >= 10:
        assert str(topic.topic_id) == broker.registry.get("events").topic_id
    # Before v4 a request cannot say "do not create": the broker's auto.create.topics.enable decides, as in Kafka.
    expected = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if version >= 4 else ErrorCode.NO_ERROR
    assert metadata(broker, ["missing"], version=version).topics[0].error_code == expected
    assert metadata(broker, [], version=version).topics == ()


def test_a_tenant_sees_only_its_topics_by_plain_name_and_others_are_forbidden(managed):
    broker = managed.broker
    client = tenant_client(Operation.READ, Operation.WRITE)
    listed = metadata(broker, None, call=client, operations=True)
    assert [topic.name for topic in listed.topics] == ["orders"]
    operations = listed.topics[0].topic_authorized_operations
    assert operations & (1 << 3) and operations & (1 << 4) and operations & (1 << 8) and not operations & (1 << 6)  # READ, WRITE, DESCRIBE; not DELETE
    for name in ("secrets", "events", "missing"):
        assert metadata(broker, [name], call=client).topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert produce(broker, "secrets", 0, batch(b"x"), call=client).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    denied = fetch(broker, "secrets", 0, 0, call=client).responses[0].partitions[0]
    assert denied.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and not denied.records
    assert list_offset(broker, "secrets", 0, -1, call=client).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert broker.replica_manager.partition_log(OTHER_TENANT_TOPIC, 0).log_end_offset == 0
    assert produce(broker, "orders", 0, batch(b"mine"), call=client).error_code == ErrorCode.NO_ERROR
    assert broker.replica_manager.partition_log(TENANT_TOPIC, 0).log_end_offset == 1
    assert fetch(broker, "orders", 0, 0, call=client, current_leader_epoch=2).responses[0].partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert listed.cluster_id == "weir-test" and [partition.leader_epoch for partition in listed.topics[0].partitions] == [3, 3]
    # The cluster's id, whatever is asked (librdkafka asks for no topic to learn the brokers, and
    # takes brokers answering with different ids for members of different clusters).
    assert metadata(broker, [], call=client).cluster_id == "weir-test"
    unknown = produce(broker, "orders", 3, batch(b"x"), call=client)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "tn-a" not in (unknown.error_message or "")


def test_list_offsets_earliest_latest_by_time_and_max_timestamp(broker):
    produce(broker, "events", 0, batch(b"a", b"b", b"c"))
    assert (list_offset(broker, "events", 0, -2).offset, list_offset(broker, "events", 0, -1).offset) == (0, 3)
    by_time = list_offset(broker, "events", 0, 1_700_000_000_001)
    assert (by_time.offset, by_time.timestamp, by_time.leader_epoch) == (1, 1_700_000_000_001, 0)
    assert list_offset(broker, "events", 0, -3).offset == 2
    assert list_offset(broker, "events", 0, -1, version=1).offset == 3
    assert list_offset(broker, "events", 0, -1, current_leader_epoch=0).offset == 3
    assert list_offset(broker, "events", 0, -1, current_leader_epoch=1).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_offset_for_leader_epoch_answers_from_the_epoch_cache(broker):
    produce(broker, "events", 0, batch(b"a", b"b"))
    schema = request_module(OFFSET_FOR_LEADER_EPOCH, 4)
    partitions = (
        schema.OffsetForLeaderPartition(partition=0, current_leader_epoch=0, leader_epoch=0),
        schema.OffsetForLeaderPartition(partition=1, current_leader_epoch=3, leader_epoch=0),
    )
    request = schema.OffsetForLeaderEpochRequest(replica_id=-1, topics=(schema.OffsetForLeaderTopic(topic="events", partitions=partitions),))
    answered = call_handler(broker, ANONYMOUS, OFFSET_FOR_LEADER_EPOCH, 4, request).topics[0].partitions
    assert (answered[0].error_code, answered[0].leader_epoch, answered[0].end_offset) == (ErrorCode.NO_ERROR, 0, 2)
    assert answered[1].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


@pytest.mark.parametrize("version", [0, 2, 4])
def test_init_producer_id_allocates_and_sends_transactional_ids_to_their_coordinator(broker, version):
    schema = request_module(INIT_PRODUCER_ID, version)
    request = schema.InitProducerIdRequest(transactional_id=None, transaction_timeout=TIMEOUT)
    first = call_handler(broker, ANONYMOUS, INIT_PRODUCER_ID, version, request)
    second = call_handler(broker, ANONYMOUS, INIT_PRODUCER_ID, version, request)
    assert first.error_code == ErrorCode.NO_ERROR and first.producer_id >= 0 and first.producer_epoch == 0
    assert second.producer_id != first.producer_id
    # Before any FindCoordinator(TRANSACTION) a standalone broker has no __transaction_state yet.
    refused = call_handler(broker, ANONYMOUS, INIT_PRODUCER_ID, version, schema.InitProducerIdRequest(transactional_id="tx", transaction_timeout=TIMEOUT))
    assert refused.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE and refused.producer_id == -1
    denied = call_handler(broker, tenant_client(Operation.READ), INIT_PRODUCER_ID, version, request)
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_describe_producers_reports_each_idempotent_producer_of_a_partition(broker):
    schema = request_module(INIT_PRODUCER_ID, 4)
    allocated = call_handler(broker, ANONYMOUS, INIT_PRODUCER_ID, 4, schema.InitProducerIdRequest(transactional_id=None, transaction_timeout=TIMEOUT))
    records = build_batch(
        [(1_700_000_000_000, None, b"a", None), (1_700_000_000_005, None, b"b", None)],
        producer_id=allocated.producer_id,
        producer_epoch=allocated.producer_epoch,
        base_sequence=0,
    )
    assert produce(broker, "events", 0, records).error_code == ErrorCode.NO_ERROR
    request_schema = request_module(DESCRIBE_PRODUCERS, 0)
    request = request_schema.DescribeProducersRequest(topics=(request_schema.TopicRequest(name="events", partition_indexes=(0, 1, 7)),))
    partitions = call_handler(broker, ANONYMOUS, DESCRIBE_PRODUCERS, 0, request).topics[0].partitions
    (producer,) = partitions[0].active_producers
    assert (producer.producer_id, producer.producer_epoch, producer.last_sequence, producer.last_timestamp) == (
        allocated.producer_id,
        allocated.producer_epoch,
        1,
        1_700_000_000_005,
    )
    assert partitions[1].error_code == ErrorCode.NO_ERROR and partitions[1].active_producers == ()
    assert partitions[2].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    denied = call_handler(broker, tenant_client(Operation.DESCRIBE), DESCRIBE_PRODUCERS, 0, request).topics[0].partitions[0]
    assert denied.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_a_tenant_over_its_quota_gets_throttle_time_and_the_handler_never_sleeps(managed):
    managed.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(version=1, quotas=[admin_pb2.TenantQuota(tenant_id="tn-a", produce_bytes_per_second=100, consume_bytes_per_second=100)]),
        metadata=INTERNAL,
    )
    client = tenant_client(Operation.READ, Operation.WRITE)
    schema = request_module(PRODUCE, 9)
    request = schema.ProduceRequest(
        acks=1,
        timeout=TIMEOUT,
        topic_data=(schema.TopicProduceData(name="orders", partition_data=(schema.PartitionProduceData(index=0, records=batch(b"x" * 500)),)),),
    )
    produced = call_handler(managed.broker, client, PRODUCE, 9, request)
    assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
    assert produced.throttle_time > datetime.timedelta(0)
    fetched = fetch(managed.broker, "orders", 0, 0, call=client)
    assert fetched.responses[0].partitions[0].records and fetched.throttle_time > datetime.timedelta(0)
    assert managed.throttle_delays == []  # the Kafka connection mutes itself; only the gRPC servicer sleeps


@pytest.mark.parametrize("version", [13, 16])
def test_fetch_by_topic_id_reads_the_callers_topic_and_treats_other_ids_as_unknown(managed, version):
    broker = managed.broker
    client = tenant_client(Operation.READ, Operation.WRITE)
    assert produce(broker, "orders", 0, batch(b"by-id"), call=client).error_code == ErrorCode.NO_ERROR
    orders_id = uuid.UUID(broker.registry.get(TENANT_TOPIC).topic_id)
    answer = fetch(broker, None, 0, 0, version=version, call=client, topic_id=orders_id)
    assert answer.responses[0].topic_id == orders_id
    assert [record.value for record in iter_records(bytes(answer.responses[0].partitions[0].records))] == [b"by-id"]
    for unknown in (uuid.UUID(broker.registry.get(OTHER_TENANT_TOPIC).topic_id), uuid.uuid4()):
        refused = fetch(broker, None, 0, 0, version=version, call=client, topic_id=unknown).responses[0]
        assert refused.topic_id == unknown and refused.partitions[0].error_code == UNKNOWN_TOPIC_ID


def test_metadata_by_topic_id_answers_the_callers_topics_only(managed):
    broker = managed.broker
    client = tenant_client(Operation.READ)
    own, other = (uuid.UUID(broker.registry.get(name).topic_id) for name in (TENANT_TOPIC, OTHER_TENANT_TOPIC))
    topics = metadata(broker, [], call=client, ids=(own, other)).topics
    assert [(topic.name, topic.topic_id, topic.error_code) for topic in topics] == [
        ("orders", own, ErrorCode.NO_ERROR),
        (None, other, UNKNOWN_TOPIC_ID),
    ]


@pytest.mark.parametrize(("produce_version", "fetch_version"), [(9, 11), (11, 12), (11, 16)])
def test_a_partition_led_elsewhere_names_its_leader_and_endpoint(managed, produce_version, fetch_version):
    client = tenant_client(Operation.READ, Operation.WRITE, topic="elsewhere")
    schema = request_module(PRODUCE, produce_version)
    request = schema.ProduceRequest(
        acks=-1,
        timeout=TIMEOUT,
        topic_data=(schema.TopicProduceData(name="elsewhere", partition_data=(schema.PartitionProduceData(index=0, records=batch(b"x")),)),),
    )
    produced = call_handler(managed.broker, client, PRODUCE, produce_version, request)
    answer = produced.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    if produce_version >= 10:
        assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (2, 3)
        assert [(node.node_id, node.host, node.port) for node in produced.node_endpoints] == [(2, "127.0.0.2", OTHER_BROKER_KAFKA_PORT)]
    fetched = fetch(
        managed.broker, "elsewhere", 0, 0, version=fetch_version, call=client, topic_id=uuid.UUID(managed.broker.registry.get("tn-a~elsewhere").topic_id)
    )
    partition = fetched.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    if fetch_version >= 12:
        assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (2, 3)
    if fetch_version >= 16:
        assert [node.node_id for node in fetched.node_endpoints] == [2]


def test_metadata_auto_creates_only_for_a_standalone_brokers_tenantless_callers(broker, managed):
    created = metadata(broker, ["fresh"], auto_create=True).topics[0]
    assert created.error_code == ErrorCode.NO_ERROR and len(created.partitions) == 2  # num.partitions
    assert metadata(broker, ["not-asked"], auto_create=False).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    tenant = metadata(managed.broker, ["fresh"], call=tenant_client(Operation.ALL, topic="fresh"), auto_create=True).topics[0]
    assert tenant.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # a tenant's topics come from the control plane
