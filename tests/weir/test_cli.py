"""The `weir` CLI in-process against a real broker process.

One broker serves the whole module (starting one costs more than all these tests together);
each test works on its own topics.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator

import pytest

from tests.support.processes import BrokerProcess
from weir.cli import main

_topic_numbers = itertools.count()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("cli-broker") / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def topic() -> str:
    """A topic name no other test uses."""
    return f"cli-topic-{next(_topic_numbers)}"


class Weir:
    """Runs `weir ...` in-process against the module's broker."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.bootstrap = broker.address

    def __call__(self, *argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main([*argv, "--bootstrap-server", self.bootstrap], stdin=io.BytesIO(stdin), stdout=stdout, stderr=stderr, environ={})
        return code, stdout.getvalue(), stderr.getvalue()

    def ok(self, *argv: str, stdin: bytes = b"") -> str:
        code, out, err = self(*argv, stdin=stdin)
        assert code == 0, f"weir {' '.join(argv)} exited {code}: {err}"
        return out

    def describe(self, topic: str) -> dict:
        return json.loads(self.ok("topics", "describe", topic, "--output", "json"))


@pytest.fixture
def weir(broker: BrokerProcess) -> Weir:
    return Weir(broker)


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 1
    assert err.startswith("weir: error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err


# ------------------------------------------------------------------ topics


def test_topic_lifecycle_create_list_describe_alter_delete(weir: Weir, topic: str) -> None:
    assert weir.ok("topics", "create", topic, "--partitions", "2", "--replication-factor", "1", "--config", "retention.ms=60000") == f"Created topic {topic}.\n"

    listed = json.loads(weir.ok("topics", "list", "--output", "json"))
    assert {"name": topic, "partitions": 2, "replication_factor": 1, "internal": False} in listed

    described = weir.describe(topic)
    assert described["configs"] == {"retention.ms": "60000"}
    assert described["partitions"] == [
        {"partition": 0, "leader": 1, "replicas": [1], "isr": [1], "earliest_offset": 0, "latest_offset": 0},
        {"partition": 1, "leader": 1, "replicas": [1], "isr": [1], "earliest_offset": 0, "latest_offset": 0},
    ]

    weir.ok("topics", "alter", topic, "--partitions", "3", "--add-config", "cleanup.policy=compact", "--delete-config", "retention.ms")
    altered = weir.describe(topic)
    assert [partition["partition"] for partition in altered["partitions"]] == [0, 1, 2]
    assert altered["configs"] == {"cleanup.policy": "compact"}

    assert weir.ok("topics", "delete", topic) == f"Deleted topic {topic}.\n"
    assert topic not in [entry["name"] for entry in json.loads(weir.ok("topics", "list", "--output", "json"))]
    assert_one_line_error(*weir("topics", "delete", topic)[::2], "does not exist")
    assert weir.ok("topics", "delete", topic, "--if-exists") == f"Topic {topic} does not exist.\n"


def test_tables_name_topic_partitions_and_overrides(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic, "--partitions", "2", "--config", "max.message.bytes=2000")

    listing = weir.ok("topics", "list")
    description = weir.ok("topics", "describe", topic)

    assert "Topic" in listing and "Partitions" in listing and topic in listing
    assert f"Topic: {topic}  Partitions: 2  Replication factor: 1" in description
    assert "Earliest offset" in description and "Latest offset" in description
    assert "max.message.bytes" in description and "2000" in description


def test_create_existing_topic_fails_unless_if_not_exists(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic)

    assert_one_line_error(*weir("topics", "create", topic)[::2], "TOPIC_ALREADY_EXISTS")
    assert weir.ok("topics", "create", topic, "--if-not-exists") == f"Topic {topic} already exists.\n"


def test_create_with_validate_only_creates_nothing(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic, "--validate-only")

    assert_one_line_error(*weir("topics", "describe", topic)[::2], "does not exist")


def test_create_with_invalid_name_fails_with_broker_reason(weir: Weir) -> None:
    assert_one_line_error(*weir("topics", "create", "../x")[::2], "INVALID_TOPIC_EXCEPTION")


def test_commands_on_unknown_topic_fail_with_one_line(weir: Weir) -> None:
    for argv in (["topics", "describe", "no-such-topic"], ["produce", "no-such-topic"], ["consume", "no-such-topic"]):
        assert_one_line_error(*weir(*argv, stdin=b"x\n")[::2], "'no-such-topic' does not exist")


def test_unreachable_broker_fails_with_one_line() -> None:
    stdout, stderr = io.StringIO(), io.StringIO()

    code = main(["topics", "list", "--bootstrap-server", "127.0.0.1:1", "--request-timeout-ms", "2000"], stdout=stdout, stderr=stderr, environ={})

    assert_one_line_error(code, stderr.getvalue(), "127.0.0.1:1")


# ------------------------------------------------------------------ produce and consume


def test_produce_lines_with_keys_then_consume_them_from_beginning(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic, "--partitions", "1")

    code, _, err = weir("produce", topic, "--key-separator", ":", "--header", "source=cli", stdin=b"k1:first\nk2:second:part\n:third\r\n")
    out = weir.ok("consume", topic, "--from-beginning", "--max-messages", "3", "--print-key", "--print-offset", "--print-headers", "--key-separator", "|")

    assert (code, err) == (0, "3 records delivered, 0 failed.\n")
    assert out.splitlines() == [
        "Offset:0|source:cli|k1|first",
        "Offset:1|source:cli|k2|second:part",
        "Offset:2|source:cli||third",
    ]
    assert [partition["latest_offset"] for partition in weir.describe(topic)["partitions"]] == [3]


def test_consume_without_from_beginning_starts_at_the_end(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic)
    weir.ok("produce", topic, stdin=b"old\n")

    code, out, err = weir("consume", topic, "--timeout-ms", "700")

    assert (code, out) == (0, "")
    assert err == "Processed a total of 0 messages\n"


def test_consume_one_partition_from_an_offset(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic, "--partitions", "2")
    weir.ok("produce", topic, "--partition", "1", stdin=b"a\nb\nc\n")
    weir.ok("produce", topic, "--partition", "0", stdin=b"elsewhere\n")

    out = weir.ok("consume", topic, "--partition", "1", "--offset", "1", "--max-messages", "2", "--print-partition")

    assert out.splitlines() == ["Partition:1\tb", "Partition:1\tc"]


def test_consume_with_group_resumes_after_committed_offset(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic)
    weir.ok("produce", topic, stdin=b"one\ntwo\nthree\n")

    first = weir.ok("consume", topic, "--group", "readers", "--from-beginning", "--max-messages", "2")
    second = weir.ok("consume", topic, "--group", "readers", "--from-beginning", "--max-messages", "1")

    assert (first, second) == ("one\ntwo\n", "three\n")


def test_produce_line_without_key_separator_stops_with_line_number(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic)

    code, _, err = weir("produce", topic, "--key-separator", ":", stdin=b"k:v\nno separator\nk:w\n")

    assert code == 1
    assert err.splitlines() == ["1 records delivered, 0 failed.", "weir: error: line 2 has no key separator ':'; stopped there"]


def test_produce_reports_broker_refusal_and_exits_one(weir: Weir, topic: str) -> None:
    weir.ok("topics", "create", topic, "--config", "max.message.bytes=1024")

    code, _, err = weir("produce", topic, stdin=b"x" * 5000 + b"\n")

    assert code == 1
    lines = err.splitlines()
    assert lines[0] == "0 records delivered, 1 failed."
    assert lines[1].startswith("  1 x ") and "MESSAGE_TOO_LARGE" in lines[1]
