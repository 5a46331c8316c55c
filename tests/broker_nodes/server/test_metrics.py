"""A broker's /metrics: request counts and latency per method and status, record bytes in and
out, throttle time, partition errors, log sizes and disk space, read over real HTTP."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from broker_nodes.metrics.requests import MetricsInterceptor, RequestMetrics
from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import batch, create_topic
from tests.support.in_process_broker import InProcessBroker
from tests.support.processes import free_port
from weir.errors import ErrorCode


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample at ``url`` as {(name, sorted labels): value}."""
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode("utf-8")
    return samples(text)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value for family in text_string_to_metric_families(text) for sample in family.samples}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    port = free_port()
    broker = InProcessBroker(tmp_path_factory.mktemp("metrics") / "data", {"metrics.port": str(port), "offsets.topic.num.partitions": "1"}).start()
    yield broker, f"http://127.0.0.1:{port}/metrics"
    broker.stop()


def test_produce_and_fetch_are_counted_with_their_bytes_and_latency(served) -> None:  # type: ignore[no-untyped-def]
    broker, url = served
    create_topic(broker.stub, "metered")
    records = batch([b"x" * 100, b"y" * 100])
    produce = broker_pb2.ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topics=[broker_pb2.ProduceTopicData(topic="metered", partitions=[broker_pb2.ProducePartitionData(partition=0, records=records)])],
    )
    before = scrape(url)
    assert broker.stub.Produce(produce).topics[0].partitions[0].error_code == 0
    fetch = broker_pb2.FetchRequest(
        max_wait_ms=0, topics=[broker_pb2.FetchTopic(topic="metered", partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0)])]
    )
    fetched = broker.stub.Fetch(fetch).topics[0].partitions[0].records
    after = scrape(url)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    assert grew("weir_broker_requests_total", service="weir.v1.Broker", method="Produce", code="OK") == 1
    assert grew("weir_broker_requests_total", service="weir.v1.Broker", method="Fetch", code="OK") == 1
    assert grew("weir_broker_request_duration_seconds_count", service="weir.v1.Broker", method="Produce") == 1
    assert grew("weir_broker_request_duration_seconds_sum", service="weir.v1.Broker", method="Produce") > 0
    assert grew("weir_broker_bytes_in_total") == len(records)
    assert grew("weir_broker_bytes_out_total") == len(fetched) > 0
    assert after[("weir_broker_log_size_bytes", ())] >= len(records)
    assert after[("weir_broker_partitions", ())] >= 2  # the topic and __consumer_offsets
    assert after[("weir_broker_leader_partitions", ())] == after[("weir_broker_partitions", ())]  # standalone: leads what it hosts
    assert 0 < after[("weir_broker_data_dir_free_bytes", ())] <= after[("weir_broker_data_dir_total_bytes", ())]
    assert after[("weir_broker_ready", ())] == 1


def test_refused_calls_are_counted_with_their_status_and_partition_errors_by_name(served) -> None:  # type: ignore[no-untyped-def]
    broker, url = served
    before = scrape(url)
    with pytest.raises(grpc.RpcError) as refused:
        broker.stub.Produce(broker_pb2.ProduceRequest(acks=1, topics=[]))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    unknown = broker_pb2.FetchRequest(max_wait_ms=0, topics=[broker_pb2.FetchTopic(topic="no-such-topic", partitions=[broker_pb2.FetchPartition(partition=0)])])
    assert broker.stub.Fetch(unknown).topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    after = scrape(url)
    invalid = ("weir_broker_requests_total", (("code", "INVALID_ARGUMENT"), ("method", "Produce"), ("service", "weir.v1.Broker")))
    assert after[invalid] - before.get(invalid, 0) == 1
    errors = ("weir_broker_partition_errors_total", (("error", "UNKNOWN_TOPIC_OR_PARTITION"), ("method", "Fetch")))
    assert after[errors] - before.get(errors, 0) == 1


def test_throttled_responses_add_their_throttle_time() -> None:
    """The interceptor reads throttle_time_ms off the response (quotas themselves are tested with security)."""
    registry = CollectorRegistry()
    interceptor = MetricsInterceptor(RequestMetrics(registry))

    class Context:
        def code(self):  # type: ignore[no-untyped-def]
            return None

    answer = broker_pb2.ProduceResponse(throttle_time_ms=250)
    handler = interceptor.intercept_service(
        lambda details: grpc.unary_unary_rpc_method_handler(lambda request, context: answer), type("Details", (), {"method": "/weir.v1.Broker/Produce"})()
    )
    for _ in range(2):
        handler.unary_unary(broker_pb2.ProduceRequest(), Context())
    assert registry.get_sample_value("weir_broker_throttle_time_seconds_total", {"method": "Produce"}) == 0.5
    assert registry.get_sample_value("weir_broker_throttled_responses_total", {"method": "Produce"}) == 2
    assert registry.get_sample_value("weir_broker_requests_total", {"service": "weir.v1.Broker", "method": "Produce", "code": "OK"}) == 2


def test_a_taken_metrics_port_stops_the_broker_from_starting(tmp_path: Path, served) -> None:  # type: ignore[no-untyped-def]
    _, url = served
    taken = int(url.split(":")[2].split("/")[0])
    with pytest.raises(OSError, match="metrics.port"):
        InProcessBroker(tmp_path / "data", {"metrics.port": str(taken)}).start()


def test_the_metrics_port_comes_from_the_flag_or_the_environment(tmp_path: Path) -> None:
    from broker_nodes.config import BrokerConfigError
    from broker_nodes.server.main import parse_arguments

    base = ["--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path)]
    assert parse_arguments(base, {})["metrics.port"] == 0
    assert parse_arguments([*base, "--metrics-port", "9311"], {})["metrics.port"] == 9311
    assert parse_arguments(base, {"WEIR_BROKER_METRICS_PORT": "9312"})["metrics.port"] == 9312
    with pytest.raises(BrokerConfigError, match="metrics.port"):
        parse_arguments([*base, "--metrics-port", "70000"], {})
