"""AdminClient against a real broker: futures keyed as confluent-kafka keys them, per-item errors."""

from __future__ import annotations

import pytest

from tests.weir.sdk_support import create_topic
from weir import KafkaError, KafkaException, Producer, TopicPartition
from weir.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions, NewTopic, OffsetSpec


@pytest.fixture
def admin(broker):
    client = AdminClient({"bootstrap.servers": broker.address})
    yield client
    client.close()


def error_code(future) -> int:
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=20)
    return raised.value.error.code()


def test_create_topics_resolves_each_topic_and_reports_existing_ones(admin) -> None:
    futures = admin.create_topics([NewTopic("alpha", 2, 1), NewTopic("beta", 1, 1)])
    assert set(futures) == {"alpha", "beta"}
    assert [future.result(timeout=20) for future in futures.values()] == [None, None]
    again = admin.create_topics([NewTopic("alpha", 2, 1)])
    assert error_code(again["alpha"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert sorted(admin.list_topics(timeout=10).topics["alpha"].partitions) == [0, 1]


def test_create_topic_with_bad_config_fails_with_invalid_config(admin) -> None:
    futures = admin.create_topics([NewTopic("bad-config", 1, 1, config={"retention.ms": "abc"})])
    assert error_code(futures["bad-config"]) == KafkaError.INVALID_CONFIG


def test_validate_only_creates_nothing(admin) -> None:
    admin.create_topics([NewTopic("dry-run", 1, 1)], validate_only=True)["dry-run"].result(timeout=20)
    assert "dry-run" not in admin.list_topics(timeout=10).topics


def test_create_partitions_grows_and_refuses_to_shrink(admin) -> None:
    admin.create_topics([NewTopic("growing", 1, 1)])["growing"].result(timeout=20)
    admin.create_partitions([NewPartitions("growing", 3)])["growing"].result(timeout=20)
    assert sorted(admin.list_topics("growing", timeout=10).topics["growing"].partitions) == [0, 1, 2]
    assert error_code(admin.create_partitions([NewPartitions("growing", 2)])["growing"]) == KafkaError.INVALID_PARTITIONS


def test_delete_topics_removes_and_reports_unknown(admin) -> None:
    admin.create_topics([NewTopic("doomed", 1, 1)])["doomed"].result(timeout=20)
    admin.delete_topics(["doomed"])["doomed"].result(timeout=20)
    assert "doomed" not in admin.list_topics(timeout=10).topics
    assert error_code(admin.delete_topics(["doomed"])["doomed"]) == KafkaError.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_and_alter_configs(admin) -> None:
    admin.create_topics([NewTopic("configured", 1, 1, config={"retention.ms": "60000"})])["configured"].result(timeout=20)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "configured")
    configs = admin.describe_configs([resource])[resource].result(timeout=20)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert configs["cleanup.policy"].is_default

    change = ConfigResource(
        "topic",
        "configured",
        incremental_configs=[
            ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    admin.incremental_alter_configs([change])[change].result(timeout=20)
    configs = admin.describe_configs([resource])[resource].result(timeout=20)
    assert configs["segment.ms"].value == "3600000"
    assert configs["retention.ms"].is_default

    replace = ConfigResource("topic", "configured", set_config={"cleanup.policy": "compact"})
    admin.alter_configs([replace])[replace].result(timeout=20)
    configs = admin.describe_configs([resource])[resource].result(timeout=20)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.ms"].is_default  # a full replace drops what it does not name

    bad = ConfigResource("topic", "configured", set_config={"retention.ms": "soon"})
    assert error_code(admin.alter_configs([bad])[bad]) == KafkaError.INVALID_CONFIG


def test_list_offsets_by_spec(admin, broker) -> None:
    create_topic(broker.address, "offsets")
    producer = Producer({"bootstrap.servers": broker.address})
    for index in range(4):
        producer.produce("offsets", b"v", timestamp=1_700_000_000_000 + index)
    producer.close(10)
    partition = TopicPartition("offsets", 0)
    earliest = admin.list_offsets({partition: OffsetSpec.earliest()})[partition].result(timeout=20)
    latest = admin.list_offsets({partition: OffsetSpec.latest()})[partition].result(timeout=20)
    at_time = admin.list_offsets({partition: OffsetSpec.for_timestamp(1_700_000_000_002)})[partition].result(timeout=20)
    assert (earliest.offset, latest.offset, at_time.offset) == (0, 4, 2)
    missing = TopicPartition("offsets", 9)
    assert error_code(admin.list_offsets({missing: OffsetSpec.latest()})[missing]) == KafkaError.UNKNOWN_TOPIC_OR_PARTITION


def test_unreachable_cluster_fails_every_future_with_transport_error() -> None:
    client = AdminClient({"bootstrap.servers": "127.0.0.1:1", "socket.timeout.ms": 2000})
    futures = client.create_topics([NewTopic("x", 1, 1)])
    code = error_code(futures["x"])
    client.close()
    assert code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT)
