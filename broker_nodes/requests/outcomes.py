"""Mapping typed errors to what a client reads: Kafka's code and a message with the tenant's plain names."""

from __future__ import annotations

from broker_nodes.security.access import CallContext
from broker_nodes.server.errors import error_code_and_message

NO_ERROR = 0


def plain_error(error: BaseException, call: CallContext, topic: str) -> tuple[int, str]:
    """(Kafka error code, message) for ``error`` met on the caller's ``topic`` (plain name).

    Storage and replication errors name the stored (tenant-qualified) topic; the caller must
    only ever read the name it chose, so the qualified name is replaced by the plain one.
    """
    code, message = error_code_and_message(error)
    qualified = call.qualify(topic)
    if qualified != topic:
        message = message.replace(qualified, topic)
    return code, message
