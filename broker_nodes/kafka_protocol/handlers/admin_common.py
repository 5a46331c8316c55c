"""What the admin handlers share: kio's per-version classes, Kafka error values, whole-request refusals.

kio generates one module per API version with its own classes (``CreatableTopicResult`` of v2
has no ``topic_id``, v7's has), so a handler builds the classes of the version it answers and
:func:`build` leaves out the fields that version does not have. A request the neutral layer
refuses as a whole (:class:`InvalidRequestError`: a name given twice, no entry at all) is answered
as Kafka does: INVALID_REQUEST on every entry, with the reason.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import importlib
import uuid
from types import ModuleType
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.requests import configs as config_requests
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from grpc_protos.weir.v1 import broker_pb2

NO_THROTTLE = datetime.timedelta(0)  # admin requests are not charged to byte-rate quotas


def response_module(context: api.KafkaRequestContext) -> ModuleType:
    """The kio module holding the response classes of the request's API version."""
    return _response_module(context.api_key, context.api_version)


# Cached: kio resolves a schema through its index and the import machinery, about 0.1 ms a call,
# which a Produce or Fetch of one small batch would otherwise pay on every request.
@functools.cache
def _response_module(api_key: int, api_version: int) -> ModuleType:
    return importlib.import_module(load_response_schema(api_key, api_version).__module__)


@functools.cache
def _field_names(entity_type: type) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(entity_type))


def build(entity_type: type, **values: Any) -> Any:
    """An instance of the kio class with the given fields; fields this version lacks are left out."""
    names = _field_names(entity_type)
    return entity_type(**{name: value for name, value in values.items() if name in names})


def error_fields(code: int, message: str) -> dict[str, Any]:
    """``error_code`` and ``error_message`` (null when there is no error, as Kafka sends it)."""
    return {"error_code": ErrorCode(code), "error_message": message if code else None}


def error_fields_of(error: BaseException) -> dict[str, Any]:
    return error_fields(*error_code_and_message(error))


def timeout_ms(timeout: datetime.timedelta) -> int:
    return int(timeout.total_seconds() * 1000)


def topic_uuid(text: str) -> uuid.UUID | None:
    """A topic id as kio carries it (the broker keeps it as text); None when there is none."""
    try:
        return uuid.UUID(text) if text else None
    except ValueError:
        return None


def alter_configs_responses(
    context: api.KafkaRequestContext, schema: Any, request: Any, resources: list[broker_pb2.AlterConfigsResource | Exception]
) -> tuple[Any, ...]:
    """AlterConfigs / IncrementalAlterConfigs answers, one per resource of ``request``, in order.

    ``resources`` holds, per resource of the request, the change to make or the error that
    already refused it; the changes go to ``requests.configs.alter_configs`` together.
    """
    changes = [resource for resource in resources if not isinstance(resource, Exception)]
    results: list[broker_pb2.ConfigResourceResult] = []
    if changes:
        pb_request = broker_pb2.AlterConfigsRequest(resources=changes, validate_only=request.validate_only)
        try:
            results = list(config_requests.alter_configs(context.broker, context.call, pb_request).resources)
        except InvalidRequestError as error:
            code, message = error_code_and_message(error)
            results = [broker_pb2.ConfigResourceResult(error_code=code, error_message=message) for _ in changes]
    remaining = iter(results)
    answers = []
    for resource, change in zip(request.resources, resources, strict=True):
        code, message = error_code_and_message(change) if isinstance(change, Exception) else _code_and_message(next(remaining))
        answers.append(
            schema.AlterConfigsResourceResponse(resource_type=resource.resource_type, resource_name=resource.resource_name, **error_fields(code, message))
        )
    return tuple(answers)


def _code_and_message(result: broker_pb2.ConfigResourceResult) -> tuple[int, str]:
    return result.error_code, result.error_message
