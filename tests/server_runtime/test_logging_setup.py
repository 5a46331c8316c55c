"""Log output: JSON lines with the documented keys and the request id, the text format kept."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from server_runtime.logging_setup import JsonLogFormatter, LogFormatError, RequestIdFilter, log_format, logging_config
from server_runtime.request_ids import request_id_scope

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@pytest.fixture
def json_lines() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger of its own writing through the JSON formatter and the request id filter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLogFormatter())
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("tests.weir.json_lines")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield logger, stream
    finally:
        logger.removeHandler(handler)


def _records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_each_record_is_one_json_line_with_the_documented_keys(json_lines) -> None:  # type: ignore[no-untyped-def]
    logger, stream = json_lines
    logger.info("applied map %d\nsecond line", 7)
    [record] = _records(stream)
    assert list(record) == ["ts", "level", "logger", "message", "process", "thread"]
    assert record["level"] == "INFO"
    assert record["logger"] == "tests.weir.json_lines"
    assert record["message"] == "applied map 7\nsecond line"
    assert isinstance(record["process"], int)
    assert record["thread"] == "MainThread"
    assert str(record["ts"]).endswith("Z") and "T" in str(record["ts"])


def test_request_id_is_a_key_only_while_one_is_current(json_lines) -> None:  # type: ignore[no-untyped-def]
    logger, stream = json_lines
    with request_id_scope("req-42"):
        logger.warning("inside")
    logger.warning("outside")
    inside, outside = _records(stream)
    assert inside["request_id"] == "req-42"
    assert "request_id" not in outside


def test_extra_fields_and_exceptions_become_keys(json_lines) -> None:  # type: ignore[no-untyped-def]
    logger, stream = json_lines
    logger.info("moved", extra={"topic": "orders", "partition": 3, "detail": object()})
    try:
        raise ValueError("broken")
    except ValueError:
        logger.exception("failed")
    moved, failed = _records(stream)
    assert (moved["topic"], moved["partition"]) == ("orders", 3)
    assert str(moved["detail"]).startswith("<object object")
    assert failed["level"] == "ERROR"
    assert "ValueError: broken" in str(failed["exc_info"])


def test_text_format_is_the_callers_format_unchanged() -> None:
    config = logging_config(text_format=TEXT_FORMAT, environment={})
    assert config["formatters"]["plain"] == {"format": TEXT_FORMAT}
    assert config["root"] == {"handlers": ["console"], "level": "INFO"}
    assert logging_config(text_format=TEXT_FORMAT, environment={"WEIR_LOG_FORMAT": "text"}) == config


def test_json_format_is_chosen_by_the_environment() -> None:
    config = logging_config(text_format=TEXT_FORMAT, level="DEBUG", environment={"WEIR_LOG_FORMAT": " JSON "})
    assert config["formatters"]["plain"] == {"()": "server_runtime.logging_setup.JsonLogFormatter"}
    assert config["handlers"]["console"]["filters"] == ["request_id"]
    assert config["root"]["level"] == "DEBUG"


def test_unknown_log_format_names_the_variable_and_the_choices() -> None:
    assert log_format({}) == "text"
    with pytest.raises(LogFormatError, match=r"WEIR_LOG_FORMAT must be one of text, json, not 'xml'"):
        log_format({"WEIR_LOG_FORMAT": "xml"})
