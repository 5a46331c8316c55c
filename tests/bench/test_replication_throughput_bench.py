"""`python -m bench replication-throughput`: run order, ratio and verdict on their own, then the
whole benchmark, small (one run of a few thousand records on a real `make up` stack). No
timing assertion on the figures: the machine running the suite may be busy."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from bench import replication_throughput
from bench.measurements import ThroughputSample
from bench.replication_throughput import (
    KAFKA_REPLICATED,
    KAFKA_UNREPLICATED,
    REPLICATED,
    UNREPLICATED,
    WORKLOADS,
    kafka_verdict,
    run_order,
    throughput_ratio,
    verdict,
)
from bench.systems.base import SystemUnavailable
from bench.systems.weir_system import LIBRDKAFKA, WeirOptions

REPOSITORY = Path(__file__).resolve().parents[2]
# A workload's row: "│ RF=3 acks=all │    1 │   149,171 │  14.2 │  842.1 │  927.4 │"
ROW = r"│ {label}\s+│\s+1 │\s+([\d,]+) │\s+([\d.,]+) │"


def samples_at(*records_per_second: int) -> list[ThroughputSample]:
    return [ThroughputSample(records=rate, record_size=100, seconds=1.0) for rate in records_per_second]


def test_runs_alternate_which_workload_goes_first() -> None:
    assert run_order(1) == WORKLOADS == (UNREPLICATED, REPLICATED, KAFKA_UNREPLICATED, KAFKA_REPLICATED)
    assert run_order(2) == (KAFKA_REPLICATED, KAFKA_UNREPLICATED, REPLICATED, UNREPLICATED)
    assert run_order(3) == WORKLOADS


def test_ratio_is_of_the_medians_over_runs() -> None:
    ratio = throughput_ratio({UNREPLICATED: samples_at(100_000, 200_000, 300_000), REPLICATED: samples_at(50_000, 100_000, 900_000)})
    assert ratio == 0.5
    kafka = {KAFKA_UNREPLICATED: samples_at(400_000), KAFKA_REPLICATED: samples_at(100_000), UNREPLICATED: samples_at(1)}
    assert throughput_ratio(kafka, LIBRDKAFKA) == 0.25


def test_kafka_verdict_holds_librdkafkas_replicated_median_against_issue_14s_target() -> None:
    assert kafka_verdict({KAFKA_REPLICATED: samples_at(421_823)}).endswith("target met")
    assert kafka_verdict({KAFKA_REPLICATED: samples_at(100_000, 400_000, 900_000)}).endswith("target NOT met")
    assert kafka_verdict({REPLICATED: samples_at(900_000)}).endswith("target NOT met")


def test_verdict_says_met_at_the_target_and_not_met_below_or_unmeasured() -> None:
    assert verdict(0.4).endswith("target met")
    assert verdict(0.39).endswith("target NOT met")
    assert verdict(throughput_ratio({UNREPLICATED: samples_at(100_000)})).endswith("target NOT met")


def test_an_unreachable_front_door_is_left_out_and_the_other_still_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    class System:
        def __init__(self, options: WeirOptions) -> None:
            if options.library == LIBRDKAFKA:
                raise SystemUnavailable("Weir (Kafka protocol, librdkafka)", "no metadata")
            self.library = options.library

        def produce_to(self, topic: str, records: int, values: object) -> ThroughputSample:
            return ThroughputSample(records=records, record_size=100, seconds=1.0)

        def close(self) -> None:
            pass

    monkeypatch.setattr(replication_throughput, "WeirSystem", System)
    monkeypatch.setattr(replication_throughput, "ApiClient", type("Api", (), {"for_stack": staticmethod(lambda credentials: None)}))
    monkeypatch.setattr(replication_throughput, "AdminClient", lambda config: type("Admin", (), {"close": lambda self: None})())
    monkeypatch.setattr(replication_throughput, "create_topic", lambda *args: None)
    monkeypatch.setattr(replication_throughput, "wait_until_healthy", lambda *args: None)
    credentials = type(
        "Credentials",
        (),
        {"bootstrap_servers": "", "kafka_bootstrap_servers": "", "client_config": dict, "security_config": dict, "kafka_security_config": dict},
    )()
    stack = type("Stack", (), {"credentials": credentials})()
    unavailable: list[str] = []
    samples = replication_throughput.measure(stack, 2, 10, 100, "sync", Console(quiet=True), unavailable)  # type: ignore[arg-type]
    assert {workload.row_label: len(runs) for workload, runs in samples.items()} == {
        "RF=1 acks=1": 2,
        "RF=3 acks=all": 2,
        "RF=1 acks=1 (librdkafka)": 0,
        "RF=3 acks=all (librdkafka)": 0,
    }
    assert len(unavailable) == 2 and all("no metadata" in reason for reason in unavailable)
    with pytest.raises(SystemUnavailable):
        replication_throughput.measure(stack, 1, 10, 100, "sync", Console(quiet=True))  # type: ignore[arg-type]
