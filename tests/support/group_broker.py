"""Real consumer groups for the end-to-end tests of the group tooling (CLI, REST, dashboard).

``GROUP_BROKER_CONFIGS`` makes a broker hand out assignments within a fraction of a second
(members heartbeat every 200 ms); :func:`join_and_commit` starts a subscribed consumer that
reads every record there is, commits its positions and stays in its group until the test
closes it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.support.processes import BrokerProcess
from weir import Consumer, Producer

GROUP_BROKER_CONFIGS = {
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
}
# Longest wait for records to arrive in a subscribed consumer.
CONSUME_SECONDS = 30.0


def start_group_broker(directory: Path, topic: str, partitions: int, timeout_seconds: float) -> BrokerProcess:
    """A broker process with :data:`GROUP_BROKER_CONFIGS` (one offsets partition) and ``topic`` created through its
    Kafka listener by confluent-kafka's AdminClient, for the stock clients' group tests. The caller stops it."""
    from confluent_kafka.admin import AdminClient, NewTopic

    process = BrokerProcess(directory, configs={**GROUP_BROKER_CONFIGS, "offsets.topic.num.partitions": "1"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": process.kafka_address})
        admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=timeout_seconds)[topic].result(timeout=timeout_seconds)
    except BaseException:
        process.stop()
        raise
    return process


def produce(config: Mapping[str, Any], topic: str, values_per_partition: Mapping[int, int]) -> None:
    """``values_per_partition[p]`` records into partition ``p``, acknowledged before returning."""
    producer = Producer({**config, "linger.ms": 0})
    try:
        for partition, count in values_per_partition.items():
            for number in range(count):
                producer.produce(topic, value=f"{partition}-{number}".encode(), partition=partition)
        assert producer.flush(CONSUME_SECONDS) == 0, "records were not acknowledged in time"
    finally:
        producer.close()


def join_and_commit(config: Mapping[str, Any], topic: str, group: str, records: int) -> Consumer:
    """A consumer in ``group`` subscribed to ``topic`` that has read ``records`` records (all
    the topic has) from the earliest offsets and committed its positions. The caller closes it."""
    consumer = Consumer(
        {**config, "group.id": group, "client.id": f"{group}-client", "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000}
    )
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + CONSUME_SECONDS
    while read < records and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error() is not None:
            continue
        read += 1
    if read < records:
        consumer.close()
        raise AssertionError(f"read {read} of {records} records of {topic} in {CONSUME_SECONDS} s")
    consumer.commit(asynchronous=False)
    return consumer
