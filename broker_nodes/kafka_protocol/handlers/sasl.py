"""SaslHandshake (key 17, v0-v1) and SaslAuthenticate (key 36, v0-v2).

Before a connection has authenticated, the connection hands these requests to
:func:`answer_sasl_step`, which drives its :class:`~broker_nodes.kafka_protocol.sasl.SaslSession`
(they change the connection's state, which no ordinary handler may). Registered here, they are
listed by ApiVersions; once authenticated, a second handshake or token is answered
ILLEGAL_SASL_STATE by the registered handlers, as Kafka does without re-authentication (KIP-368).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.sasl import ENABLED_MECHANISMS, SASL_AUTHENTICATE_KEY, SASL_HANDSHAKE_KEY, SaslSession, SaslState

HANDSHAKE_MAX_VERSION = 1
AUTHENTICATE_MAX_VERSION = 2


@dataclass(frozen=True)
class SaslAnswer:
    """The response to one SASL step, and whether the connection closes after sending it."""

    response: Any
    close: bool


def handshake_response(version: int, error_code: ErrorCode) -> Any:
    schema: Any = load_response_schema(SASL_HANDSHAKE_KEY, version)
    return schema(error_code=error_code, mechanisms=ENABLED_MECHANISMS)


def authenticate_response(version: int, error_code: ErrorCode, message: str | None, auth_bytes: bytes = b"") -> Any:
    fields: dict[str, Any] = {"error_code": error_code, "error_message": message, "auth_bytes": auth_bytes}
    if version >= 1:
        fields["session_lifetime"] = datetime.timedelta(0)  # no re-authentication required (KIP-368)
    schema: Any = load_response_schema(SASL_AUTHENTICATE_KEY, version)
    return schema(**fields)


def answer_sasl_step(session: SaslSession, api_key: int, version: int, request: Any) -> SaslAnswer:
    """Drive ``session`` with a SaslHandshake or SaslAuthenticate request; the response and whether to close after it."""
    if api_key == SASL_HANDSHAKE_KEY:
        error_code = session.handshake(request.mechanism, version)
        return SaslAnswer(handshake_response(version, error_code), close=session.state == SaslState.FAILED)
    outcome = session.authenticate(request.auth_bytes)
    return SaslAnswer(authenticate_response(version, outcome.error_code, outcome.message, outcome.auth_bytes), close=not outcome.succeeded)


@api.handles(SASL_HANDSHAKE_KEY, 0, HANDSHAKE_MAX_VERSION)
def handle_sasl_handshake(context: api.KafkaRequestContext, request: Any) -> Any:
    del request
    return handshake_response(context.api_version, ErrorCode.illegal_sasl_state)


@api.handles(SASL_AUTHENTICATE_KEY, 0, AUTHENTICATE_MAX_VERSION)
def handle_sasl_authenticate(context: api.KafkaRequestContext, request: Any) -> Any:
    del request
    return authenticate_response(context.api_version, ErrorCode.illegal_sasl_state, "this connection has authenticated already")
