"""The DataSource's pure parts: option parsing, range splitting, streaming offsets and rate limits, pipeline settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_pipelines.settings import MissingInternalTokenError, PipelineSettings, internal_source_options
from spark_pipelines.source_errors import InvalidOptionError, one_line_errors, one_line_iteration
from spark_pipelines.source_offsets import PartitionBounds, from_json_offsets, resolve_start, to_json_offsets
from spark_pipelines.source_options import EARLIEST, LATEST, OffsetsSpec, parse_options
from spark_pipelines.source_planning import OffsetRange, limit_offsets, plan_input_partitions

BASE = {"bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"}


def test_defaults_follow_sparks_kafka_source() -> None:
    batch = parse_options(BASE, streaming=False)
    assert (batch.starting, batch.ending) == (OffsetsSpec("earliest"), OffsetsSpec("latest"))
    assert (batch.fail_on_data_loss, batch.include_headers, batch.min_partitions, batch.poll_timeout_seconds) == (True, False, None, 120.0)
    assert parse_options(BASE, streaming=True).starting == OffsetsSpec("latest")
    assert batch.selection.topics == ("orders",)


def test_offsets_json_is_parsed_per_topic_and_partition() -> None:
    options = parse_options({**BASE, "STARTINGOFFSETS": '{"orders": {"0": 23, "1": -2}}', "endingOffsets": '{"orders": {"1": -1}}'}, streaming=False)
    assert options.starting.specific == {"orders": {0: 23, 1: EARLIEST}}
    assert options.starting.offset_for("orders", 2, EARLIEST) == EARLIEST  # not named: the default
    assert options.ending.offset_for("orders", 1, LATEST) == LATEST


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"startingOffsets": "{nope"}, r"option 'startingOffsets': expected \"earliest\", \"latest\" or JSON"),
        ({"startingOffsets": '{"orders": {"0": "ten"}}'}, r"orders \[0\]: offset \"ten\" must be an offset >= 0, -2 \(earliest\) or -1 \(latest\)"),
        ({"startingOffsets": '{"orders": {"x": 1}}'}, r"topic 'orders': partition 'x' is not a partition number"),
        ({"startingOffsets": '{"orders": {"0": -3}}'}, r"offset -3 must be an offset"),
        ({"startingOffsets": '{"payments": {"0": 1}}'}, r"topic 'payments' is not among the subscribed topics \(orders\)"),
        ({"startingOffsets": "latest"}, r"option 'startingOffsets': latest \(-1\) is not allowed for batch queries"),
        ({"endingOffsets": '{"orders": {"0": -2}}'}, r"option 'endingOffsets': earliest \(-2\) is not allowed for batch queries"),
        ({"maxOffsetsPerTrigger": "10"}, r"option 'maxOffsetsPerTrigger': is for streaming queries only"),
        ({"startingOffset": "earliest"}, r"option 'startingoffset': unknown option of the weir source"),
        ({"assign": '{"orders": [0]}'}, r"give exactly one of subscribe, subscribePattern or assign \(given: subscribe, assign\)"),
        ({"subscribe": " , "}, r"option 'subscribe': names no topic"),
        ({"minPartitions": "0"}, r"option 'minPartitions': expected a positive integer, got '0'"),
        ({"includeHeaders": "yes"}, r"option 'includeHeaders': expected true or false, got 'yes'"),
        ({"bootstrap.servers": ""}, r"option 'bootstrap.servers': must be set"),
        ({"sasl.username": "KEY"}, r"option 'sasl.password': an API key needs both sasl.username and sasl.password"),
        ({"sasl.username": "KEY", "sasl.password": "s", "weir.internal.token": "t"}, r"give either an API key .* or the internal token, not both"),
        ({"kafka.auto.offset.reset": "latest"}, r"option 'kafka.auto.offset.reset': is set by the source itself \(use startingOffsets and failOnDataLoss\)"),
        ({"kafka.no.such.key": "1"}, r"No such configuration property: \"no.such.key\""),
        ({"kafka.fetch.wait.max.ms": "soon"}, r"Invalid value \"soon\" for configuration property \"fetch.wait.max.ms\""),
    ],
)
def test_bad_options_fail_naming_what_was_wrong(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        parse_options({**BASE, **options}, streaming=False)


def test_streaming_refuses_an_end_and_assign_must_cover_the_json() -> None:
    with pytest.raises(InvalidOptionError, match=r"option 'endingOffsets': is for batch queries only"):
        parse_options({**BASE, "endingOffsets": "latest"}, streaming=True)
    with pytest.raises(InvalidOptionError, match=r"orders \[3\] is not among the assigned partitions"):
        parse_options({"bootstrap.servers": "b:1", "assign": '{"orders": [0, 1]}', "startingOffsets": '{"orders": {"3": 0}}'}, streaming=True)
    with pytest.raises(InvalidOptionError, match=r"option 'subscribePattern': is not a regular expression"):
        parse_options({"bootstrap.servers": "b:1", "subscribePattern": "(unclosed"}, streaming=True)


def test_client_options_become_the_consumer_configuration() -> None:
    options = parse_options(
        {
            **BASE,
            "sasl.username": "KEY",
            "sasl.password": "secret",
            "ssl.ca.location": "/etc/ca.pem",
            "kafka.fetch.wait.max.ms": "100",
            "kafka.retry.backoff.ms": "50",
        },
        streaming=False,
    )
    assert options.client_config == {
        "client.id": "weir-spark-source",
        "bootstrap.servers": "127.0.0.1:9092",
        "sasl.username": "KEY",
        "sasl.password": "secret",
        "ssl.ca.location": "/etc/ca.pem",
        "security.protocol": "sasl_ssl",  # a CA means TLS
        "fetch.wait.max.ms": "100",
        "retry.backoff.ms": "50",
    }
    with pytest.raises(InvalidOptionError, match=r'"weir.tenant" was removed: .*tenant token \(weir.tenant.token\)'):
        parse_options({**BASE, "weir.internal.token": "t", "kafka.weir.tenant": "tn-x"}, streaming=False)
    with pytest.raises(InvalidOptionError, match=r"option 'kafka.bootstrap.servers': contradicts option 'bootstrap.servers'"):
        parse_options({**BASE, "kafka.bootstrap.servers": "elsewhere:9092"}, streaming=False)
    assert parse_options({"subscribe": "orders", "kafka.bootstrap.servers": "b:1"}, streaming=False).bootstrap_servers == "b:1"


def test_each_range_is_one_input_partition_and_empty_ranges_are_dropped() -> None:
    ranges = [OffsetRange("orders", 1, 5, 9), OffsetRange("orders", 0, 0, 3), OffsetRange("orders", 2, 4, 4)]
    assert plan_input_partitions(ranges) == [OffsetRange("orders", 0, 0, 3), OffsetRange("orders", 1, 5, 9)]


def test_max_records_per_partition_cuts_every_long_range_into_near_equal_pieces() -> None:
    pieces = plan_input_partitions([OffsetRange("orders", 0, 100, 110), OffsetRange("orders", 1, 0, 4)], max_records_per_partition=4)
    assert [(piece.partition, piece.from_offset, piece.until_offset) for piece in pieces] == [(0, 100, 103), (0, 103, 106), (0, 106, 110), (1, 0, 4)]


def test_min_partitions_cuts_large_ranges_in_proportion_and_leaves_small_ones_whole() -> None:
    # Spark's KafkaOffsetRangeCalculator: the small range gets round(10/1010 * 4) = 0 -> 1 piece and stays whole;
    # the big one shares the 3 partitions left: round(1000/1000 * 3) = 3 pieces.
    pieces = plan_input_partitions([OffsetRange("big", 0, 0, 1000), OffsetRange("small", 0, 0, 10)], min_partitions=4)
    assert [(piece.topic, piece.from_offset, piece.until_offset) for piece in pieces] == [
        ("big", 0, 333),
        ("big", 333, 666),
        ("big", 666, 1000),
        ("small", 0, 10),
    ]
    unsplit = [OffsetRange("a", 0, 0, 10), OffsetRange("b", 0, 0, 10)]
    assert plan_input_partitions(unsplit, min_partitions=2) == unsplit  # enough already


def test_offsets_resolve_against_the_partition_bounds() -> None:
    bounds = {("orders", 0): PartitionBounds(5, 20), ("orders", 1): PartitionBounds(0, 7)}
    spec = OffsetsSpec("specific", {"orders": {0: 12}})
    assert resolve_start(spec, bounds, bounds, fail_on_data_loss=True) == {("orders", 0): 12, ("orders", 1): 0}
    assert resolve_start(OffsetsSpec("specific", {"orders": {0: 2}}), bounds, bounds, fail_on_data_loss=False)[("orders", 0)] == 5  # clamped to the log start
    assert resolve_start(OffsetsSpec("latest"), bounds, bounds, fail_on_data_loss=True) == {("orders", 0): 20, ("orders", 1): 7}


def test_streaming_offsets_are_sparks_json_shape() -> None:
    offsets = {("orders", 10): 4, ("orders", 2): 9, ("events", 0): 1}
    as_json = to_json_offsets(offsets)
    assert as_json == {"events": {"0": 1}, "orders": {"2": 9, "10": 4}}
    assert from_json_offsets(as_json) == offsets


def test_max_offsets_per_trigger_is_shared_in_proportion_to_each_backlog() -> None:
    starts = {("t", 0): 0, ("t", 1): 100}
    ends = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}  # partition 2 is new: not limited
    assert limit_offsets(starts, ends, 100) == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    assert limit_offsets(starts, ends, 1000) == ends


def test_settings_come_from_the_environment_with_the_control_planes_defaults(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "internal-token").write_text("token-from-file\n")
    settings = PipelineSettings.from_env({"WEIR_DATA_DIR": str(tmp_path)})
    assert settings == PipelineSettings(
        bootstrap_servers="127.0.0.1:9092",
        internal_token="token-from-file",
        tls_ca=None,
        data_dir=tmp_path.resolve(),
        output_dir=tmp_path.resolve() / "pipelines",
        spark_master="local[*]",
    )
    assert internal_source_options(settings) == {"bootstrap.servers": "127.0.0.1:9092", "weir.internal.token": "token-from-file"}
    custom = PipelineSettings.from_env(
        {
            "WEIR_DATA_DIR": str(tmp_path),
            "WEIR_INTERNAL_TOKEN": "from-env",
            "WEIR_BOOTSTRAP_SERVERS": "b1:9092,b2:9092",
            "WEIR_BROKER_TLS_CA": "/etc/ca.pem",
            "WEIR_PIPELINE_DIR": str(tmp_path / "out"),
            "WEIR_SPARK_MASTER": "spark://m:7077",
        }
    )
    assert (custom.internal_token, custom.output_dir, custom.spark_master) == ("from-env", tmp_path.resolve() / "out", "spark://m:7077")
    assert internal_source_options(custom) == {"bootstrap.servers": "b1:9092,b2:9092", "weir.internal.token": "from-env", "ssl.ca.location": "/etc/ca.pem"}


def test_without_a_token_the_internal_options_say_where_one_was_looked_for(tmp_path: Path) -> None:
    settings = PipelineSettings.from_env({"WEIR_DATA_DIR": str(tmp_path)})
    assert settings.internal_token is None
    with pytest.raises(MissingInternalTokenError, match=r"set WEIR_INTERNAL_TOKEN.*no token file at .*secrets/internal-token"):
        internal_source_options(settings)
    assert not (tmp_path / "secrets").exists()  # looked for, never created


def test_the_sources_own_errors_ask_the_python_worker_for_their_line_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_HIDE_TRACEBACK", raising=False)
    monkeypatch.delenv("WEIR_SOURCE_TRACEBACK", raising=False)

    @one_line_errors
    def plan(fail: type[Exception]) -> None:
        raise fail("weir source: option 'x': bad") if fail is not InvalidOptionError else InvalidOptionError("x", "bad")

    with pytest.raises(KeyError):
        plan(KeyError)  # a bug keeps its traceback
    assert "SPARK_HIDE_TRACEBACK" not in os.environ
    with pytest.raises(InvalidOptionError, match="option 'x': bad"):
        plan(InvalidOptionError)
    assert os.environ["SPARK_HIDE_TRACEBACK"] == "1"
    monkeypatch.delenv("SPARK_HIDE_TRACEBACK")

    def rows() -> Iterator[int]:
        yield 1
        raise InvalidOptionError("y", "bad")

    monkeypatch.setenv("WEIR_SOURCE_TRACEBACK", "1")  # the operator asked for tracebacks
    with pytest.raises(InvalidOptionError):
        list(one_line_iteration(rows()))
    assert "SPARK_HIDE_TRACEBACK" not in os.environ
