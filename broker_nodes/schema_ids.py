"""The broker's cache of schema ids: which subjects a tenant's schema id is a live version of.

Broker-side schema validation (``requests/schema_validation.py``) asks this for every record's
schema id. The answer comes from the control plane's registry over the Controller service
(``SchemaSubjects``) and is kept per (tenant, schema id):

- an id with subjects (a positive entry) for :data:`POSITIVE_TTL_SECONDS`: registered versions
  rarely change, so a warm produce path costs one dict lookup per record;
- an id without subjects (a negative entry) for :data:`NEGATIVE_TTL_SECONDS` only, so that a
  schema registered just after a refused record is accepted within seconds;
- at most :data:`MAX_ENTRIES` entries; the oldest inserted goes first when it is full.

A controller that cannot be reached raises :class:`SchemaRegistryUnavailableError`
(retriable): a record is never accepted because its id could not be checked.

Thread-safe: lookups of a warm entry read a dict; inserts and evictions hold a lock. Two
threads missing the same entry at once may both ask the controller (harmless).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from broker_nodes.controller_client import ControllerClient, ControllerUnavailableError
from grpc_protos.weir.v1 import controller_pb2
from weir.errors import ErrorCode

POSITIVE_TTL_SECONDS = 300.0  # an id known to have subjects is asked again after this long
NEGATIVE_TTL_SECONDS = 5.0  # an id without subjects (or without the wanted one) is asked again after this long
MAX_ENTRIES = 10_000  # (tenant, id) pairs kept per broker
LOOKUP_TIMEOUT_SECONDS = 2.0  # one SchemaSubjects call; a produce request waits at most this per address

# (tenant id, schema id) -> the subjects the id is a live version of (empty: none); raises SchemaRegistryUnavailableError.
SchemaLookup = Callable[[str, int], tuple[str, ...]]


class SchemaRegistryUnavailableError(Exception):
    """The schema registry could not be asked about a record's schema id (a retriable error)."""

    retriable = True

    def __init__(self, reason: str) -> None:
        super().__init__(f"schema validation is unavailable: {reason}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Entry:
    subjects: frozenset[str]
    fetched_at: float  # monotonic seconds
    expires_at: float


class SchemaIdCache:
    """See the module docstring. ``lookup`` asks the registry; ``monotonic`` is the injected clock."""

    def __init__(
        self,
        lookup: SchemaLookup,
        monotonic: Callable[[], float],
        *,
        positive_ttl: float = POSITIVE_TTL_SECONDS,
        negative_ttl: float = NEGATIVE_TTL_SECONDS,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        if max_entries < 1:
            raise ValueError("a schema id cache needs room for at least one entry")
        self._lookup = lookup
        self._monotonic = monotonic
        self._positive_ttl = positive_ttl
        self._negative_ttl = negative_ttl
        self._max_entries = max_entries
        self._entries: dict[tuple[str, int], _Entry] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def subjects(self, tenant_id: str, schema_id: int, *, max_age: float | None = None) -> frozenset[str]:
        """The subjects ``schema_id`` of ``tenant_id`` is a live version of (empty: none).

        A cached answer is used until it expires, or, given ``max_age``, once it is older than
        that (a caller whose subject is missing from a positive entry asks again after the
        negative TTL, so a version added to another subject is seen quickly).
        """
        key = (tenant_id, schema_id)
        entry = self._entries.get(key)
        now = self._monotonic()
        if entry is not None and now < entry.expires_at and (max_age is None or now - entry.fetched_at < max_age):
            return entry.subjects
        subjects = frozenset(self._lookup(tenant_id, schema_id))
        ttl = self._positive_ttl if subjects else self._negative_ttl
        with self._lock:
            self._entries.pop(key, None)
            while len(self._entries) >= self._max_entries:
                del self._entries[next(iter(self._entries))]
            self._entries[key] = _Entry(subjects, now, now + ttl)
        return subjects

    @property
    def negative_ttl(self) -> float:
        return self._negative_ttl


def controller_schema_lookup(controller: ControllerClient | None) -> SchemaLookup:
    """A :data:`SchemaLookup` over the controller's ``SchemaSubjects``; without a controller every lookup is unavailable."""

    def lookup(tenant_id: str, schema_id: int) -> tuple[str, ...]:
        if controller is None:
            raise SchemaRegistryUnavailableError("this broker runs without a controller, so it cannot reach the schema registry")
        request = controller_pb2.SchemaSubjectsRequest(tenant_id=tenant_id, schema_id=schema_id)
        try:
            response: controller_pb2.SchemaSubjectsResponse = controller.call("SchemaSubjects", request, timeout=LOOKUP_TIMEOUT_SECONDS)
        except ControllerUnavailableError as error:
            raise SchemaRegistryUnavailableError(str(error)) from error
        except grpc.RpcError as error:
            raise SchemaRegistryUnavailableError(f"the controller answered {error.code().name}") from error
        if response.error_code == ErrorCode.INVALID_REQUEST:  # no such tenant: it has no schemas
            return ()
        if response.error_code != ErrorCode.NO_ERROR:
            raise SchemaRegistryUnavailableError(response.error_message or f"the controller answered error {response.error_code}")
        return tuple(response.subjects)

    return lookup
