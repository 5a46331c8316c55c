"""The security snapshot: cluster API keys, ACL bindings and quotas of every tenant, and its store.

On disk: ``<data_dir>/security-state.json`` (mode 0600: it holds secret hashes) =
``{"format": 1, "snapshot": SecuritySnapshot.to_json()}``, replaced atomically, so a broker
restarts with the last credentials it was given and keeps refusing revoked keys. A credential's
SCRAM entries (``"scram"``: mechanism, base64 salt, iterations, base64 StoredKey and ServerKey)
are absent for keys that have none and in files written before SCRAM support; ``"cluster_admin":
true`` marks a key that acts as its tenant's cluster administrator (absent: ACLs decide).

``"scram_users"`` (absent in files written before tenant SCRAM users) lists the SCRAM users
tenants' admins made: tenant, name and the same SCRAM entries; a Kafka client logs in as one
with the login name ``<name>@<tenant id>`` (:func:`weir.admin_scram.scram_login_name`).

A key absent from the latest snapshot does not exist: revoking a key is pushing a snapshot
without it, and it stops working the moment that snapshot is stored.

Thread-safety: a snapshot is immutable; the store replaces its reference in one assignment
and readers never lock. ``store`` calls are serialized by the caller.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from broker_nodes import names
from broker_nodes.cluster_state import InvalidSnapshotError, StaleSnapshotError
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from broker_nodes.security.scram import ScramCredential
from broker_nodes.storage.atomic_files import write_atomically
from grpc_protos.weir.v1 import admin_pb2
from weir.admin_scram import SCRAM_LOGIN_SEPARATOR, scram_login_name

SECURITY_STATE_FILE_NAME = "security-state.json"  # in the data directory
SECURITY_STATE_FORMAT = 1  # the "format" field of security-state.json
SECURITY_STATE_FILE_MODE = 0o600  # readable by the broker's user only: it holds secret hashes
UNLIMITED = 0  # a quota of 0 bytes per second means no limit


_NO_SCRAM: Mapping[str, ScramCredential] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Credential:
    api_key: str
    secret_sha256: str  # hex
    tenant_id: str
    principal: str
    scram: Mapping[str, ScramCredential] = field(default_factory=lambda: _NO_SCRAM)  # mechanism -> credential; empty for keys made before SCRAM support
    cluster_admin: bool = False  # the tenant's cluster administrator: no ACL is consulted (admin.proto's Credential.cluster_admin)

    def to_json(self) -> dict[str, object]:
        document: dict[str, object] = {"api_key": self.api_key, "secret_sha256": self.secret_sha256, "tenant_id": self.tenant_id, "principal": self.principal}
        if self.scram:
            document["scram"] = _scram_to_json(self.scram)
        if self.cluster_admin:
            document["cluster_admin"] = True
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Credential:
        return cls(
            str(data["api_key"]),
            str(data["secret_sha256"]),
            str(data["tenant_id"]),
            str(data["principal"]),
            _scram_from_json(data.get("scram", ())),
            data.get("cluster_admin") is True,
        )


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _scram_of(items: Iterable[admin_pb2.ScramCredential], owner: str) -> Mapping[str, ScramCredential]:
    """Pushed SCRAM entries by mechanism; InvalidSnapshotError names the first problem and ``owner`` (a key or a user)."""
    scram: dict[str, ScramCredential] = {}
    for item in items:
        credential = ScramCredential(item.mechanism, item.salt, item.iterations, item.stored_key, item.server_key)
        problem = credential.problem()
        if problem is not None:
            raise InvalidSnapshotError(f"{owner}: {problem}")
        if item.mechanism in scram:
            raise InvalidSnapshotError(f"{owner} has {item.mechanism} more than once")
        scram[item.mechanism] = credential
    return MappingProxyType(scram) if scram else _NO_SCRAM


def _scram_to_json(scram: Mapping[str, ScramCredential]) -> list[list[object]]:
    return [[item.mechanism, _base64(item.salt), item.iterations, _base64(item.stored_key), _base64(item.server_key)] for item in scram.values()]


def _scram_from_json(entries: Iterable[Sequence[Any]]) -> Mapping[str, ScramCredential]:
    scram = {
        str(mechanism): ScramCredential(str(mechanism), base64.b64decode(salt), int(iterations), base64.b64decode(stored), base64.b64decode(server))
        for mechanism, salt, iterations, stored, server in entries
    }
    return MappingProxyType(scram) if scram else _NO_SCRAM


@dataclass(frozen=True, slots=True)
class ScramUser:
    """A SCRAM user a tenant's admin made (not an API key): principal ``User:<name>`` in ``tenant_id``."""

    tenant_id: str
    name: str
    scram: Mapping[str, ScramCredential]  # mechanism -> credential; at least one

    @property
    def login_name(self) -> str:
        return scram_login_name(self.name, self.tenant_id)

    @property
    def principal(self) -> str:
        return f"User:{self.name}"

    def to_json(self) -> dict[str, object]:
        return {"tenant_id": self.tenant_id, "name": self.name, "scram": _scram_to_json(self.scram)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScramUser:
        return cls(str(data["tenant_id"]), str(data["name"]), _scram_from_json(data["scram"]))


def _scram_users_of(request: admin_pb2.ApplySecurityRequest) -> dict[str, ScramUser]:
    """The pushed SCRAM users by login name; InvalidSnapshotError names the first problem."""
    users: dict[str, ScramUser] = {}
    for entry in request.scram_users:
        if not entry.tenant_id or names.TENANT_SEPARATOR in entry.tenant_id or SCRAM_LOGIN_SEPARATOR in entry.tenant_id or not entry.name:
            raise InvalidSnapshotError(f"SCRAM user {entry.name!r} needs a name and a valid tenant id")
        user = ScramUser(entry.tenant_id, entry.name, _scram_of(entry.scram, f"SCRAM user {entry.name!r} of tenant {entry.tenant_id}"))
        if not user.scram:
            raise InvalidSnapshotError(f"SCRAM user {entry.name!r} of tenant {entry.tenant_id} has no credential")
        if user.login_name in users:
            raise InvalidSnapshotError(f"SCRAM user {entry.name!r} of tenant {entry.tenant_id} occurs more than once")
        users[user.login_name] = user
    return users


@dataclass(frozen=True, slots=True)
class TenantQuota:
    produce_bytes_per_second: int = UNLIMITED
    consume_bytes_per_second: int = UNLIMITED


NO_QUOTA = TenantQuota()
_NO_ACLS: tuple[AclEntry, ...] = ()


@dataclass(frozen=True)
class SecuritySnapshot:
    """One applied ``ApplySecurity`` request, indexed for the hot path (key -> credential, tenant -> ACLs)."""

    version: int
    credentials: Mapping[str, Credential] = field(default_factory=lambda: MappingProxyType({}))
    acls: Mapping[str, tuple[AclEntry, ...]] = field(default_factory=lambda: MappingProxyType({}))
    quotas: Mapping[str, TenantQuota] = field(default_factory=lambda: MappingProxyType({}))
    scram_users: Mapping[str, ScramUser] = field(default_factory=lambda: MappingProxyType({}))  # by login name

    def scram_users_of(self, tenant_id: str) -> dict[str, ScramUser]:
        """The tenant's SCRAM users by name."""
        return {user.name: user for user in self.scram_users.values() if user.tenant_id == tenant_id}

    def acls_of(self, tenant_id: str) -> tuple[AclEntry, ...]:
        return self.acls.get(tenant_id, _NO_ACLS)

    def quota_of(self, tenant_id: str) -> TenantQuota:
        return self.quotas.get(tenant_id, NO_QUOTA)

    @classmethod
    def from_request(cls, request: admin_pb2.ApplySecurityRequest) -> SecuritySnapshot:
        """Parse and check a request; InvalidSnapshotError names the first problem."""
        if request.version < 1:
            raise InvalidSnapshotError(f"version must be 1 or more, not {request.version}")
        credentials: dict[str, Credential] = {}
        for entry in request.credentials:
            if not entry.api_key or len(entry.secret_sha256) != 64 or not entry.tenant_id or not entry.principal:
                raise InvalidSnapshotError(f"credential {entry.api_key!r} needs a key, a 64-digit hex SHA-256, a tenant and a principal")
            if entry.api_key in credentials:
                raise InvalidSnapshotError(f"API key {entry.api_key!r} occurs more than once")
            credentials[entry.api_key] = Credential(
                entry.api_key,
                entry.secret_sha256.lower(),
                entry.tenant_id,
                entry.principal,
                _scram_of(entry.scram, f"credential {entry.api_key!r}"),
                entry.cluster_admin,
            )
        acls: dict[str, list[AclEntry]] = {}
        for binding in request.acls:
            try:
                acl = AclEntry(
                    binding.principal,
                    ResourceType(binding.resource_type),
                    binding.resource_name,
                    PatternType(binding.pattern_type),
                    Operation(binding.operation),
                    Permission(binding.permission),
                    binding.host or "*",
                )
            except ValueError as error:
                raise InvalidSnapshotError(f"ACL binding of tenant {binding.tenant_id!r} has an unspecified or unknown enum value: {error}") from None
            if not binding.tenant_id or names.TENANT_SEPARATOR in binding.tenant_id:
                raise InvalidSnapshotError(f"ACL binding {binding.resource_name!r} has no valid tenant id")
            acls.setdefault(binding.tenant_id, []).append(acl)
        quotas = {}
        for quota in request.quotas:
            if quota.produce_bytes_per_second < 0 or quota.consume_bytes_per_second < 0:
                raise InvalidSnapshotError(f"quota of tenant {quota.tenant_id!r} is negative")
            quotas[quota.tenant_id] = TenantQuota(quota.produce_bytes_per_second, quota.consume_bytes_per_second)
        return cls(
            request.version,
            MappingProxyType(credentials),
            MappingProxyType({tenant: tuple(entries) for tenant, entries in acls.items()}),
            MappingProxyType(quotas),
            MappingProxyType(_scram_users_of(request)),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "credentials": [item.to_json() for item in self.credentials.values()],
            "acls": {
                tenant: [
                    [acl.principal, int(acl.resource_type), acl.resource_name, int(acl.pattern_type), int(acl.operation), int(acl.permission), acl.host]
                    for acl in entries
                ]
                for tenant, entries in self.acls.items()
            },
            "quotas": {tenant: [quota.produce_bytes_per_second, quota.consume_bytes_per_second] for tenant, quota in self.quotas.items()},
            "scram_users": [user.to_json() for user in self.scram_users.values()],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SecuritySnapshot:
        """From the snapshot file as json.load decodes it (values of any JSON type)."""
        credentials = {str(item["api_key"]): Credential.from_json(item) for item in data["credentials"]}
        acls = {
            tenant: tuple(
                AclEntry(principal, ResourceType(kind), name, PatternType(pattern), Operation(operation), Permission(permission), host)
                for principal, kind, name, pattern, operation, permission, host in entries
            )
            for tenant, entries in dict(data["acls"]).items()
        }
        quotas = {tenant: TenantQuota(int(produce), int(consume)) for tenant, (produce, consume) in dict(data["quotas"]).items()}
        users = (ScramUser.from_json(item) for item in data.get("scram_users", ()))
        scram_users = {user.login_name: user for user in users}
        return cls(int(data["version"]), MappingProxyType(credentials), MappingProxyType(acls), MappingProxyType(quotas), MappingProxyType(scram_users))


class SecurityStore:
    """The applied security snapshot of one broker (None until the first one arrives)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / SECURITY_STATE_FILE_NAME
        self._snapshot: SecuritySnapshot | None = None

    @property
    def path(self) -> Path:
        return self._path

    @property
    def snapshot(self) -> SecuritySnapshot | None:
        return self._snapshot

    @property
    def version(self) -> int:
        snapshot = self._snapshot
        return snapshot.version if snapshot is not None else 0

    def load(self) -> SecuritySnapshot | None:
        try:
            document = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if document.get("format") != SECURITY_STATE_FORMAT:
            raise ValueError(f"{self._path}: unsupported format {document.get('format')!r}")
        self._snapshot = SecuritySnapshot.from_json(document["snapshot"])
        return self._snapshot

    def check_not_stale(self, version: int) -> None:
        if version < self.version:
            raise StaleSnapshotError("security", version, self.version)

    def store(self, snapshot: SecuritySnapshot) -> None:
        """Persist ``snapshot``, then make it current: from here on, keys absent from it are refused."""
        document = {"format": SECURITY_STATE_FORMAT, "snapshot": snapshot.to_json()}
        write_atomically(self._path, json.dumps(document, sort_keys=True).encode("utf-8"), mode=SECURITY_STATE_FILE_MODE)
        self._snapshot = snapshot
