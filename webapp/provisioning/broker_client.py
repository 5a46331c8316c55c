"""The control plane's client of one broker's ``Admin`` gRPC service.

Every call carries the internal credential (metadata ``x-weir-internal-token``), the current
request id when there is one (``x-weir-request-id``, see ``server_runtime.request_ids``) and a
deadline; gRPC failures become typed errors naming the broker, the call and the status, so a
job's error says which broker failed and why. Not thread-safe per instance (one channel per
client); create one per job or probe.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from django.conf import settings

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from server_runtime.request_ids import with_request_id
from weir.tenant_tokens import TENANT_TOKEN_HEADER

INTERNAL_TOKEN_METADATA = "x-weir-internal-token"
TENANT_TOKEN_METADATA = TENANT_TOKEN_HEADER  # a tenant token: DescribeState of that tenant only
# Deadline of one Admin call unless settings.WEIR_ADMIN_CALL_TIMEOUT_SECONDS says otherwise:
# long enough for a broker to create a few hundred partition directories.
DEFAULT_CALL_TIMEOUT_SECONDS = 5.0
# Statuses that say the broker could not be reached or did not answer in time: try again later.
_TRANSPORT_STATUSES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED})


@dataclass(frozen=True)
class BrokerAddress:
    """Which broker to call: its node id (for messages) and ``host:port``."""

    node_id: int
    address: str


class BrokerCallError(Exception):
    """A call to a broker's Admin service failed; ``retriable`` says whether trying again may help."""

    retriable = False

    def __init__(self, broker: BrokerAddress, method: str, code: grpc.StatusCode, details: str) -> None:
        self.broker = broker
        self.method = method
        self.code = code
        self.details = details
        super().__init__(f"broker {broker.node_id} at {broker.address}: {method} failed with {code.name}: {details}")


class BrokerUnreachableError(BrokerCallError):
    """The broker did not answer (down, restarting, or too slow): retriable."""

    retriable = True


class StaleSnapshotError(BrokerCallError):
    """The broker already applied a newer snapshot (FAILED_PRECONDITION). Not an error for a
    push: the broker holds at least what was sent."""


class BrokerRejectedError(BrokerCallError):
    """The broker refused the call (wrong internal token, invalid snapshot): not retriable."""


def _error_for(broker: BrokerAddress, method: str, error: grpc.RpcError) -> BrokerCallError:
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else "") or str(error)
    if code in _TRANSPORT_STATUSES:
        return BrokerUnreachableError(broker, method, code, details)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return StaleSnapshotError(broker, method, code, details)
    return BrokerRejectedError(broker, method, code, details)


def _open_channel(address: str) -> grpc.Channel:
    """Plaintext, or TLS verified against settings.WEIR_BROKER_TLS_CA when it is set."""
    ca_location = settings.WEIR_BROKER_TLS_CA
    if not ca_location:
        return grpc.insecure_channel(address)
    # Read on every client so that a renewed CA file is picked up without a restart.
    with open(ca_location, "rb") as ca_file:
        credentials = grpc.ssl_channel_credentials(root_certificates=ca_file.read())
    return grpc.secure_channel(address, credentials)


class BrokerAdminClient:
    """Admin calls to one broker. Use as a context manager to close the channel."""

    def __init__(self, broker: BrokerAddress, *, token: str | None = None, tenant_token: str | None = None, timeout_seconds: float | None = None) -> None:
        """``tenant_token`` instead of the internal token: only ``describe_state`` answers, about
        that tenant's partitions (how the web process, which holds no internal token, reads them)."""
        self.broker = broker
        if tenant_token is not None:
            self._metadata: tuple[tuple[str, str], ...] = ((TENANT_TOKEN_METADATA, tenant_token),)
        else:
            self._metadata = ((INTERNAL_TOKEN_METADATA, token if token is not None else settings.WEIR_INTERNAL_TOKEN),)
        if timeout_seconds is None:
            timeout_seconds = float(getattr(settings, "WEIR_ADMIN_CALL_TIMEOUT_SECONDS", DEFAULT_CALL_TIMEOUT_SECONDS))
        self._timeout = timeout_seconds
        self._channel = _open_channel(broker.address)
        self._stub = admin_pb2_grpc.AdminStub(self._channel)

    def __enter__(self) -> BrokerAdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: str, request: object) -> object:
        try:
            # The request id of the job (or call) this push is for lets the broker's log lines be found by it.
            return getattr(self._stub, method)(request, timeout=self._timeout, metadata=with_request_id(self._metadata))
        except grpc.RpcError as error:
            raise _error_for(self.broker, method, error) from None

    def apply_partitions(self, request: admin_pb2.ApplyPartitionsRequest) -> admin_pb2.ApplyPartitionsResponse:
        return self._call("ApplyPartitions", request)  # type: ignore[return-value]

    def apply_security(self, request: admin_pb2.ApplySecurityRequest) -> admin_pb2.ApplySecurityResponse:
        return self._call("ApplySecurity", request)  # type: ignore[return-value]

    def describe_state(self) -> admin_pb2.DescribeStateResponse:
        return self._call("DescribeState", admin_pb2.DescribeStateRequest())  # type: ignore[return-value]
