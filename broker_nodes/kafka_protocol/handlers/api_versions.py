"""ApiVersions (key 18, v0-v3): exactly the API keys and version ranges registered in ``api``.

Finalized features are empty (Weir has no feature flags clients need to know about). A client
asking for an ApiVersions version above v3 cannot be decoded; the connection then answers v0 with
UNSUPPORTED_VERSION and this same list (:func:`api_versions_response`), as Kafka does, so the
client retries with a version it finds there.
"""

from __future__ import annotations

import datetime
import functools
import importlib
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16

from broker_nodes.kafka_protocol import api

API_VERSIONS_KEY = 18
MAX_VERSION = 3


def api_versions_response(version: int, error_code: ErrorCode = ErrorCode.none) -> Any:
    """The ApiVersions response of ``version`` listing every registered API (in key order).

    Responses are immutable and the registry is filled at import time, so each is built once
    (building one took some 0.5 ms); a registration added later builds them again.
    """
    return _cached_response(version, error_code, len(api.registrations()))


@functools.lru_cache(maxsize=32)
def _cached_response(version: int, error_code: ErrorCode, registered_count: int) -> Any:
    del registered_count  # part of the cache key only
    response_type = load_response_schema(API_VERSIONS_KEY, version)
    api_version_type = importlib.import_module(response_type.__module__).ApiVersion  # each version has its own entry class
    entries = tuple(
        api_version_type(api_key=i16(item.api_key), min_version=i16(item.min_version), max_version=i16(item.max_version))
        for _, item in sorted(api.registrations().items())
    )
    fields: dict[str, Any] = {"error_code": error_code, "api_keys": entries}
    if version >= 1:
        fields["throttle_time"] = datetime.timedelta(0)
    return response_type(**fields)


@api.handles(API_VERSIONS_KEY, 0, MAX_VERSION)
def handle_api_versions(context: api.KafkaRequestContext, request: Any) -> Any:
    del request  # v3's client software name/version are informational
    return api_versions_response(context.api_version)
