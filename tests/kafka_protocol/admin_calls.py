"""Calling the admin handlers in process: requests and responses round-tripped through kio's codecs.

Every request is encoded and decoded as the listener would receive it, and every response is
encoded and decoded as the client would read it, so a field a version lacks or a value out of
range fails here, not only against a stock client.
"""

from __future__ import annotations

import importlib
import io
from types import ModuleType
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

import broker_nodes.kafka_protocol.handlers  # noqa: F401  (registers every handler)
from broker_nodes.kafka_protocol import api
from broker_nodes.security.access import CallContext


def request_module(api_key: int, version: int) -> ModuleType:
    return importlib.import_module(load_request_schema(api_key, version).__module__)


def round_trip(entity: Any) -> Any:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    decoded, size = entity_reader(type(entity))(memoryview(buffer.getvalue()), 0)
    assert size == len(buffer.getvalue())
    return decoded


def call_handler(broker: Any, call: CallContext, api_key: int, version: int, request: Any) -> Any:
    """The handler's response to ``request`` (a kio request of ``version``), as the client decodes it."""
    registration = api.registration(api_key)
    assert registration is not None and registration.supports(version), f"no handler for API {api_key} v{version}"
    listener = api.KafkaListener(node_id=broker.config.node_id, host="127.0.0.1", port=9092)
    context = api.KafkaRequestContext(broker, call, api_key, version, correlation_id=7, client_id="test", listener=listener)
    response = api.answer_blocking(registration.handler(context, round_trip(request)))
    schema = load_response_schema(api_key, version)
    if isinstance(response, api.EncodedResponse):  # a body the handler encoded itself: decoded as the client would
        assert (response.api_key, response.api_version, response.flexible_header) == (api_key, version, schema.__flexible__)
        decoded, size = entity_reader(schema)(memoryview(response.body), 0)
        assert size == len(response.body)
        return decoded
    assert type(response) is schema
    return round_trip(response)
