"""The admin calls of issue 16 through the SDK over gRPC against one real broker: describe_cluster,
describe_topics, delete_records, incremental APPEND/SUBTRACT, config synonyms, list_groups, the
ACL calls' refusal without a tenant, AdminClient as a context manager; the serializing clients
and the asyncio clients end to end.

One broker serves the whole module (starting one costs more than these tests together); each
test works on its own topics. ACLs with a tenant and a controller: test_admin_acls_cluster.py.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
from collections.abc import Iterator

import pytest
from confluent_kafka import admin as confluent_admin

from tests.support.processes import BrokerProcess
from tests.weir.sdk_support import consume_all
from weir import Consumer, DeserializingConsumer, KafkaError, KafkaException, Producer, SerializingProducer, TopicCollection, TopicPartition
from weir.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from weir.aio import AIOConsumer, AIOProducer, AsyncDeserializingConsumer, AsyncSerializingProducer
from weir.cli import main
from weir.error import ValueDeserializationError, ValueSerializationError
from weir.serialization import IntegerDeserializer, IntegerSerializer, StringDeserializer, StringSerializer

WAIT = 20.0
_numbers = itertools.count()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("admin-calls-broker") / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": broker.address}) as client:
        yield client


def new_topic(admin: AdminClient, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    name = f"admin-calls-{next(_numbers)}"
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(timeout=WAIT)
    return name


def error_code(future) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=WAIT)
    return raised.value.error.code()


def test_describe_cluster_names_the_cluster_its_broker_and_the_callers_operations(admin: AdminClient, broker: BrokerProcess) -> None:
    described = admin.describe_cluster().result(timeout=WAIT)
    assert described.cluster_id and described.cluster_id == admin.list_topics(timeout=WAIT).cluster_id
    assert [(node.id, f"{node.host}:{node.port}") for node in described.nodes] == [(1, broker.address)]
    assert described.controller is not None and described.controller.id == 1
    assert described.authorized_operations is None
    with_operations = admin.describe_cluster(include_authorized_operations=True).result(timeout=WAIT)
    assert with_operations.authorized_operations is not None and AclOperation.DESCRIBE in with_operations.authorized_operations


def test_describe_topics_gives_partitions_with_leader_replicas_and_isr(admin: AdminClient) -> None:
    topic = new_topic(admin, partitions=2)
    futures = admin.describe_topics(TopicCollection([topic, "no-such-topic"]))
    described = futures[topic].result(timeout=WAIT)
    assert (described.name, described.is_internal, len(described.topic_id or "")) == (topic, False, 36)
    assert [(partition.id, partition.leader.id if partition.leader else None) for partition in described.partitions] == [(0, 1), (1, 1)]
    assert [[node.id for node in partition.replicas + partition.isr] for partition in described.partitions] == [[1, 1], [1, 1]]
    assert error_code(futures["no-such-topic"]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert described.authorized_operations is None
    with_operations = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(timeout=WAIT)
    assert with_operations.authorized_operations is not None and {AclOperation.READ, AclOperation.DELETE} <= set(with_operations.authorized_operations)
    with pytest.raises(TypeError, match="TopicCollection"):
        admin.describe_topics([topic])  # type: ignore[arg-type]


def test_delete_records_raises_the_log_start_offset(admin: AdminClient, broker: BrokerProcess) -> None:
    topic = new_topic(admin)
    producer = Producer({"bootstrap.servers": broker.address})
    for index in range(10):
        producer.produce(topic, value=f"record-{index}".encode())
    assert producer.flush(WAIT) == 0
    producer.close()
    first = TopicPartition(topic, 0, 4)
    assert admin.delete_records([first])[first].result(timeout=WAIT).low_watermark == 4
    earliest = TopicPartition(topic, 0)
    assert admin.list_offsets({earliest: OffsetSpec.earliest()})[earliest].result(timeout=WAIT).offset == 4
    beyond = TopicPartition(topic, 0, 11)
    assert error_code(admin.delete_records([beyond])[beyond]) == KafkaError.OFFSET_OUT_OF_RANGE
    everything = TopicPartition(topic, 0, -1)  # OFFSET_END: up to the high watermark
    assert admin.delete_records([everything])[everything].result(timeout=WAIT).low_watermark == 10
    with pytest.raises(ValueError, match="an offset"):
        admin.delete_records([TopicPartition(topic, 0, -2)])


def test_incremental_append_and_subtract_change_members_of_a_list_config(admin: AdminClient) -> None:
    topic = new_topic(admin, config={"cleanup.policy": "delete"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)

    def alter(*entries: ConfigEntry) -> None:
        admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=list(entries))])[resource].result(timeout=WAIT)

    def policy() -> str | None:
        return admin.describe_configs([resource])[resource].result(timeout=WAIT)["cleanup.policy"].value

    alter(ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    assert policy() == "delete,compact"
    alter(ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT))
    assert policy() == "compact"
    not_a_list = ConfigResource(
        ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)]
    )
    assert error_code(admin.incremental_alter_configs([not_a_list])[not_a_list]) == KafkaError.INVALID_CONFIG
    assert policy() == "compact"
    # Kafka 4 (KIP-1030): subtracting the last member leaves an empty policy, neither delete nor compact.
    alter(ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT))
    assert policy() == ""


def test_config_synonyms_are_a_dict_in_precedence_order(admin: AdminClient) -> None:
    topic = new_topic(admin, config={"retention.ms": "60000"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    retention = admin.describe_configs([resource])[resource].result(timeout=WAIT)["retention.ms"]
    assert isinstance(retention.synonyms, dict)
    synonyms = list(retention.synonyms.values())
    assert (synonyms[0].name, synonyms[0].value, synonyms[0].source, synonyms[0].is_synonym) == (
        "retention.ms",
        "60000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        True,
    )
    assert synonyms[-1].source == ConfigSource.DEFAULT_CONFIG


def test_list_groups_reports_a_group_with_its_coordinator(admin: AdminClient, broker: BrokerProcess) -> None:
    topic = new_topic(admin)
    group = f"{topic}-group"
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    listed = {item.id: item for item in admin.list_groups(timeout=WAIT)}
    assert group in listed and listed[group].error is None and listed[group].broker.id == 1
    (alone,) = admin.list_groups(group, timeout=WAIT)
    assert (alone.id, alone.members, alone.protocol_type) == (group, [], "")

    # Each door reports the caller's operations on the group when asked (KIP-430).
    assert admin.describe_consumer_groups([group])[group].result(timeout=WAIT).authorized_operations is None
    described = admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(timeout=WAIT)
    assert described.authorized_operations == [AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE]
    kafka_admin = confluent_admin.AdminClient({"bootstrap.servers": broker.kafka_address})
    over_kafka = kafka_admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(timeout=WAIT)
    assert sorted(operation.name for operation in over_kafka.authorized_operations) == ["DELETE", "DESCRIBE", "READ"]


def test_acl_calls_reach_the_broker_and_come_back_security_disabled_without_a_tenant(admin: AdminClient) -> None:
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:sa-1", "*", AclOperation.READ, AclPermissionType.ALLOW)
    assert error_code(admin.create_acls([binding])[binding]) == KafkaError.SECURITY_DISABLED
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    assert error_code(admin.describe_acls(every)) == KafkaError.SECURITY_DISABLED
    assert error_code(admin.delete_acls([every])[every]) == KafkaError.SECURITY_DISABLED
    with pytest.raises(TypeError):
        admin.create_acls([every])  # a filter is no binding to create


def test_admin_client_is_a_context_manager_that_closes(broker: BrokerProcess) -> None:
    with AdminClient({"bootstrap.servers": broker.address}) as client:
        assert client.describe_cluster().result(timeout=WAIT).cluster_id
    with pytest.raises(RuntimeError):
        client.describe_cluster()


def test_serializing_producer_and_deserializing_consumer_round_trip(admin: AdminClient, broker: BrokerProcess) -> None:
    topic = new_topic(admin)
    producer = SerializingProducer({"bootstrap.servers": broker.address, "key.serializer": IntegerSerializer(), "value.serializer": StringSerializer()})
    producer.produce(topic, key=42, value="héllo")
    with pytest.raises(ValueSerializationError):
        producer.produce(topic, key=1, value=b"\xff")  # bytes are not a str: nothing is queued
    producer.produce(topic, key=7, value=None)
    assert producer.flush(WAIT) == 0
    producer.close()
    raw = Consumer({"bootstrap.servers": broker.address, "enable.partition.eof": False})
    assert [(message.key(), message.value()) for message in consume_all(raw.assign([TopicPartition(topic, 0, 0)]) or raw, 2)] == [
        (b"\x00\x00\x00\x2a", "héllo".encode()),
        (b"\x00\x00\x00\x07", None),
    ]
    raw.close()
    consumer = DeserializingConsumer(
        {"bootstrap.servers": broker.address, "key.deserializer": IntegerDeserializer(), "value.deserializer": StringDeserializer()}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        first = consumer.poll(WAIT)
        assert first is not None and (first.key(), first.value()) == (42, "héllo")
        with pytest.raises(NotImplementedError):
            consumer.consume(1, 0)
    finally:
        consumer.close()
    picky = DeserializingConsumer({"bootstrap.servers": broker.address, "value.deserializer": IntegerDeserializer()})
    try:
        picky.assign([TopicPartition(topic, 0, 0)])
        with pytest.raises(ValueDeserializationError) as raised:
            picky.poll(WAIT)
        assert raised.value.kafka_message is not None and raised.value.kafka_message.value() == "héllo".encode()
    finally:
        picky.close()


def test_aio_producer_futures_resolve_with_delivered_messages_that_aio_consumer_reads(admin: AdminClient, broker: BrokerProcess) -> None:
    topic = new_topic(admin)
    errors: list[KafkaError] = []

    async def on_error(error: KafkaError) -> None:
        errors.append(error)

    async def run() -> tuple[list[int], list[bytes | None]]:
        async with AIOProducer({"bootstrap.servers": broker.address, "error_cb": on_error}) as producer:
            futures = [await producer.produce(topic, value=f"v{index}".encode(), key=b"k") for index in range(3)]
            delivered = await asyncio.wait_for(asyncio.gather(*futures), WAIT)
            offsets = [message.offset() or 0 for message in delivered]
            with pytest.raises(KafkaException, match="Unknown partition"):  # refused when queued, as Producer.produce refuses it
                await producer.produce(topic, value=b"x", partition=5)
        async with AIOConsumer({"bootstrap.servers": broker.address, "enable.partition.eof": False}) as consumer:
            await consumer.assign([TopicPartition(topic, 0, 0)])
            values: list[bytes | None] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT
            while len(values) < 3 and loop.time() < deadline:
                values += [message.value() for message in await consumer.consume(10, 0.5) if message.error() is None]
        return offsets, values

    offsets, values = asyncio.run(run())
    assert offsets == [0, 1, 2] and values == [b"v0", b"v1", b"v2"]
    assert errors == []


def test_aio_rebalance_callbacks_run_on_the_loop_and_may_call_the_consumer(admin: AdminClient, broker: BrokerProcess) -> None:
    topic = new_topic(admin, partitions=2)
    seen: list[tuple[bool, list[int]]] = []

    async def on_assign(consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        # A call on the consumer from its own callback runs at once (the poll holding it waits for us).
        assignment = await asyncio.wait_for(consumer.assignment(), WAIT)
        seen.append((isinstance(consumer, AIOConsumer), sorted(tp.partition for tp in partitions + assignment)))

    async def run() -> list[tuple[int | None, str | None]]:
        async with AsyncSerializingProducer(
            {"bootstrap.servers": broker.address, "key.serializer": IntegerSerializer(), "value.serializer": StringSerializer()}
        ) as producer:
            delivered = await (await producer.produce(topic, value="héllo", key=5, partition=1))
            assert delivered.partition() == 1
        conf = {
            "bootstrap.servers": broker.address,
            "group.id": f"{topic}-group",
            "auto.offset.reset": "earliest",
            "key.deserializer": IntegerDeserializer(),
            "value.deserializer": StringDeserializer(),
        }
        async with AsyncDeserializingConsumer(conf) as consumer:
            await consumer.subscribe([topic], on_assign=on_assign)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT
            while loop.time() < deadline:
                message = await consumer.poll(0.5)
                if message is not None:
                    return [(message.key(), message.value())]  # type: ignore[list-item]
        return []

    assert asyncio.run(run()) == [(5, "héllo")]
    assert seen and seen[0][0] and set(seen[0][1]) == {0, 1}


def weir_cli(broker: BrokerProcess, *argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*argv, "--bootstrap-server", broker.address], stdout=stdout, stderr=stderr, environ={})
    return code, stdout.getvalue(), stderr.getvalue()


def test_cli_cluster_describe_and_acls_refused_without_a_tenant(broker: BrokerProcess) -> None:
    code, out, _ = weir_cli(broker, "cluster", "describe", "--output", "json")
    described = json.loads(out)
    assert code == 0 and described["controller_id"] == 1 and described["brokers"][0]["port"] == broker.port and "describe" in described["authorized_operations"]
    code, _, err = weir_cli(broker, "acls", "list")
    assert code == 1 and err.startswith("weir: error:") and "SECURITY_DISABLED" in err
    code, _, err = weir_cli(broker, "acls", "delete")
    assert code == 2 and "--all" in err  # a bare delete never removes every ACL
    code, _, err = weir_cli(broker, "acls", "create", "--resource-type", "topic", "--principal", "User:sa-1", "--operation", "read")
    assert code == 2 and "--resource-name is required" in err


def test_scram_credentials_of_a_broker_without_keys(admin: AdminClient) -> None:
    assert admin.describe_user_scram_credentials().result(timeout=WAIT) == {}  # type: ignore[union-attr]
    futures = admin.describe_user_scram_credentials(["no-such-key"])
    assert isinstance(futures, dict) and error_code(futures["no-such-key"]) == KafkaError.RESOURCE_NOT_FOUND
    with pytest.raises(ValueError, match="Duplicate"):
        admin.describe_user_scram_credentials(["a", "a"])
    upsert = UserScramCredentialUpsertion("key", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"secret")
    # SCRAM users belong to a tenant and are stored by the control plane: a standalone broker has none to alter.
    assert error_code(admin.alter_user_scram_credentials([upsert])["key"]) == KafkaError.SECURITY_DISABLED
