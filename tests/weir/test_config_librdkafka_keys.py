"""The configuration keys real confluent-kafka applications set: accepted, converted, warned about once."""

from __future__ import annotations

import logging
import uuid

import pytest

from weir.config import CONSUMER, PRODUCER, ClientConfig
from weir.errors import KafkaError, KafkaException

BASE = {"bootstrap.servers": "127.0.0.1:9092"}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def app_logger() -> tuple[logging.Logger, _Records]:
    logger = logging.getLogger(f"test.app.{uuid.uuid4().hex}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    records = _Records()
    logger.addHandler(records)
    return logger, records


def _invalid(config: dict, role: str = PRODUCER) -> str:
    with pytest.raises(KafkaException) as raised:
        ClientConfig({**BASE, **config}, role)
    assert raised.value.error.code() == KafkaError._INVALID_ARG
    return raised.value.error.str()


def test_keys_applications_set_are_all_accepted() -> None:
    keys = {
        "debug": "broker,msg",
        "stats_cb": print,
        "statistics.interval.ms": 1000,
        "throttle_cb": print,
        "error_cb": print,
        "client.rack": "rack-1",
        "allow.auto.create.topics": True,
        "queue.buffering.max.messages": 1000,
        "queue.buffering.max.kbytes": 1024,
        "socket.keepalive.enable": True,
        "api.version.request": "true",
        "check.crcs": True,
        "topic.metadata.refresh.interval.ms": 1000,
        "ssl.endpoint.identification.algorithm": "none",
        "enable.ssl.certificate.verification": False,
        "log_level": 3,
        "sticky.partitioning.linger.ms": 0,
        "delivery.report.only.error": True,
        "sasl.mechanisms": "SCRAM-SHA-512",
    }
    config = ClientConfig({**BASE, **keys}, PRODUCER)
    assert config["debug"] == {"broker", "msg"}
    assert config["delivery.report.only.error"] is True
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert config.ignored == (
        "api.version.request",
        "check.crcs",
        "client.rack",
        "socket.keepalive.enable",
        "ssl.endpoint.identification.algorithm",
        "topic.metadata.refresh.interval.ms",
    )
    assert ClientConfig({**BASE, "group.protocol": "consumer"}, CONSUMER)["group.protocol"] == "consumer"


def test_ignored_keys_are_named_in_one_warning_through_the_logger(app_logger: tuple[logging.Logger, _Records]) -> None:
    logger, records = app_logger
    ClientConfig({**BASE, "logger": logger, "socket.keepalive.enable": True, "client.rack": "r", "linger.ms": 1}, PRODUCER)
    warnings = [record for record in records.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "client.rack, socket.keepalive.enable" in warnings[0].getMessage()
    assert "linger.ms" not in warnings[0].getMessage()


def test_a_typo_is_still_refused() -> None:
    assert 'No such configuration property: "socket.keepalive.enabled"' in _invalid({"socket.keepalive.enabled": True})


def test_a_uuid_group_id_is_converted_with_str() -> None:
    group = uuid.uuid4()
    assert ClientConfig({**BASE, "group.id": group}, CONSUMER)["group.id"] == str(group)


def test_default_topic_config_is_merged_and_wins() -> None:
    config = ClientConfig({**BASE, "auto.offset.reset": "latest", "default.topic.config": {"auto.offset.reset": "smallest"}}, CONSUMER)
    assert config["auto.offset.reset"] == "earliest"
    assert "default.topic.config" in _invalid({"default.topic.config": "auto.offset.reset=smallest"})


def test_auto_create_defaults_differ_by_role_as_librdkafka() -> None:
    assert ClientConfig(BASE, PRODUCER)["allow.auto.create.topics"] is True
    assert ClientConfig(BASE, CONSUMER)["allow.auto.create.topics"] is False


def test_unsupported_sasl_mechanisms_name_the_supported_ones() -> None:
    message = _invalid({"sasl.mechanism": "GSSAPI"})
    assert "GSSAPI" in message and "plain" in message and "scram-sha-256" in message and "scram-sha-512" in message


def test_scram_sends_the_api_key_like_plain() -> None:
    config = ClientConfig({**BASE, "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "k", "sasl.password": "s"}, PRODUCER)
    assert config.call_metadata() == (("x-weir-api-key", "k"), ("x-weir-api-secret", "s"))


def test_unknown_debug_context_is_refused() -> None:
    assert "unknown debug context" in _invalid({"debug": "broker,everything"})


def test_logger_must_have_a_log_method() -> None:
    assert "logging.Logger" in _invalid({"logger": "stderr"})


@pytest.mark.parametrize(("given", "expected"), [("t", True), ("1", True), (1, True), ("F", False), ("0", False)])
def test_librdkafka_boolean_spellings(given: object, expected: bool) -> None:
    assert ClientConfig({**BASE, "enable.auto.commit": given}, CONSUMER)["enable.auto.commit"] is expected


def test_client_certificate_needs_its_key() -> None:
    config = ClientConfig({**BASE, "security.protocol": "ssl", "ssl.certificate.pem": "-----BEGIN CERTIFICATE-----"}, PRODUCER)
    with pytest.raises(KafkaException, match="ssl.key.location"):
        config.channel_credentials()


def test_debug_routes_debug_records_and_log_level_filters(app_logger: tuple[logging.Logger, _Records]) -> None:
    logger, records = app_logger
    debugging = ClientConfig({**BASE, "logger": logger, "debug": "msg"}, PRODUCER).log
    debugging.debug("msg", "PRODUCE", "sent %d", 3)
    debugging.debug("cgrp", "HEARTBEAT", "not asked for")
    quiet = ClientConfig({**BASE, "logger": logger, "log_level": 3}, PRODUCER).log
    quiet.warning("FAIL", "below log_level 3: dropped")
    quiet.error("FAIL", "kept")
    assert [record.getMessage().split(" ", 1)[1] for record in records.records] == [f"[{debugging.name}] sent 3", f"[{quiet.name}] kept"]


def test_debug_conf_logs_the_configuration_without_secrets(app_logger: tuple[logging.Logger, _Records]) -> None:
    logger, records = app_logger
    ClientConfig({**BASE, "logger": logger, "debug": "conf", "sasl.username": "key", "sasl.password": "hunter2", "linger.ms": 7}, PRODUCER)
    (record,) = [record for record in records.records if "CONF" in record.getMessage()]
    assert "linger.ms=7" in record.getMessage() and "sasl.username=key" in record.getMessage()
    assert "hunter2" not in record.getMessage() and "sasl.password=[redacted]" in record.getMessage()
