"""Byte-rate quotas on the request path: charge a request's bytes, learn how long to throttle it.

Kafka's quotas are per tenant and per direction (produce, fetch). The charge is recorded at
once; the answer is the delay the transport must apply (a gRPC response is delayed, a Kafka
response carries ``throttle_time_ms`` and the connection is muted). Never sleeps.
"""

from __future__ import annotations

from broker_nodes.security.access import CallContext
from broker_nodes.security.quotas import Direction
from broker_nodes.server.broker import Broker


def charge(broker: Broker, call: CallContext, direction: Direction, size_bytes: int) -> int:
    """Charge ``size_bytes`` to the caller's tenant; the throttle time in ms (0 when within quota or untenanted).

    Calls without a tenant (standalone brokers, the internal credential) are never throttled.
    """
    security = broker.security.snapshot
    if security is None or not call.has_tenant or size_bytes <= 0:
        return 0
    quota = security.quota_of(call.tenant_id)
    rate = quota.produce_bytes_per_second if direction is Direction.PRODUCE else quota.consume_bytes_per_second
    return broker.quotas.record(call.tenant_id, direction, size_bytes, rate)
