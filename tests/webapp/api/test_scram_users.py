"""Tenants' SCRAM users in the control plane: Kafka's AlterUserScramCredentials forwarded by a broker
(``webapp.controller.scram_requests``) with Kafka's rules and error codes, what the security snapshot
carries to the brokers, and ``/api/v1/scram-users`` (members list, admins delete, other tenants see nothing).
"""

from __future__ import annotations

import hashlib
import hmac

import pytest

from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.facade import Role, ScramUserCredential
from webapp.audit.models import AuditEvent
from webapp.controller import scram_requests
from webapp.provisioning.facade import SnapshotKind, build_snapshots
from weir.admin_scram import salted_password
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db

SALT = b"salt"


def upsert(user: str, mechanism: str = "SCRAM-SHA-256", iterations: int = 10000, password: bytes = b"password") -> broker_pb2.ScramCredentialUpsertion:
    salted = salted_password(mechanism, password, SALT, iterations) if mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512") else b"x" * 32
    return broker_pb2.ScramCredentialUpsertion(user=user, mechanism=mechanism, iterations=iterations, salt=SALT, salted_password=salted)


def delete(user: str, mechanism: str = "SCRAM-SHA-256") -> broker_pb2.ScramCredentialDeletion:
    return broker_pb2.ScramCredentialDeletion(user=user, mechanism=mechanism)


def alter(tenant: TenantFixture, *alterations: broker_pb2.ScramCredentialUpsertion | broker_pb2.ScramCredentialDeletion) -> list[tuple[str, int]]:
    """Forward the alterations as a broker would for an admin of ``tenant``: (user, error code) per user."""
    caller = controller_pb2.ForwardedCaller(tenant_id=tenant.tenant.public_id, principal=tenant.members[Role.ADMIN].principal, door="kafka")
    request = broker_pb2.AlterUserScramCredentialsRequest(
        deletions=[item for item in alterations if isinstance(item, broker_pb2.ScramCredentialDeletion)],
        upsertions=[item for item in alterations if isinstance(item, broker_pb2.ScramCredentialUpsertion)],
    )
    return [(result.user, result.error_code) for result in scram_requests.alter_user_scram_credentials(caller, request).response.results]


def stored(tenant: TenantFixture) -> set[tuple[str, str, int]]:
    return set(ScramUserCredential.objects.filter(tenant=tenant.tenant).values_list("user_name", "mechanism", "iterations"))


def test_kafkas_upsert_and_delete_sequence_and_the_snapshot_carrying_the_users(acme: TenantFixture) -> None:
    assert alter(acme, upsert("non-existent")) == [("non-existent", ErrorCode.NO_ERROR)]
    assert alter(acme, upsert("non-existent"), upsert("non-existent", "SCRAM-SHA-512")) == [("non-existent", ErrorCode.NO_ERROR)]
    assert stored(acme) == {("non-existent", "SCRAM-SHA-256", 10000), ("non-existent", "SCRAM-SHA-512", 10000)}
    snapshot = build_snapshots([SnapshotKind.SECURITY]).security
    assert snapshot is not None
    [user] = snapshot.scram_users
    assert (user.tenant_id, user.name, [item.mechanism for item in user.scram]) == (acme.tenant.public_id, "non-existent", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
    # Only RFC 5802's keys are kept: nothing stored is the salted password.
    salted = salted_password("SCRAM-SHA-256", b"password", SALT, 10000)
    assert user.scram[0].stored_key == hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
    assert all(salted not in (item.stored_key, item.server_key) for item in user.scram)
    assert alter(acme, delete("non-existent", "SCRAM-SHA-512")) == [("non-existent", ErrorCode.NO_ERROR)]
    assert alter(acme, delete("non-existent")) == [("non-existent", ErrorCode.NO_ERROR)]
    assert stored(acme) == set()
    assert alter(acme, delete("non-existent")) == [("non-existent", ErrorCode.RESOURCE_NOT_FOUND)]
    assert AuditEvent.objects.filter(action="scram_user.alter", target="non-existent").count() == 4


@pytest.mark.parametrize(
    ("alterations", "code"),
    [
        ((upsert(""),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ((upsert("bob", iterations=4095),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ((upsert("bob", iterations=16385),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ((upsert("bob", "SCRAM-SHA-1"),), ErrorCode.UNSUPPORTED_SASL_MECHANISM),
        ((delete("bob", "UNKNOWN(0)"),), ErrorCode.UNSUPPORTED_SASL_MECHANISM),
        ((upsert("bob"), upsert("bob")), ErrorCode.DUPLICATE_RESOURCE),
        ((upsert("bob"), delete("bob")), ErrorCode.DUPLICATE_RESOURCE),
        ((delete("bob"),), ErrorCode.RESOURCE_NOT_FOUND),
        # Weir's own identities cannot be taken: a SCRAM user would share their principal.
        ((upsert("sa-abcdefghjk"),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ((upsert("u-abcdefghjk"),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ((upsert("bob\n"),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ((upsert("b" * 129),), ErrorCode.UNACCEPTABLE_CREDENTIAL),
    ],
)
def test_kafkas_refusals_come_with_kafkas_codes_and_store_nothing(acme: TenantFixture, alterations: tuple, code: int) -> None:
    [(_, answered)] = alter(acme, *alterations)
    assert answered == code
    assert stored(acme) == set()


def test_a_salted_password_of_the_wrong_length_or_an_empty_salt_is_unacceptable(acme: TenantFixture) -> None:
    short = broker_pb2.ScramCredentialUpsertion(user="bob", mechanism="SCRAM-SHA-512", iterations=4096, salt=SALT, salted_password=b"x" * 32)
    no_salt = broker_pb2.ScramCredentialUpsertion(user="carol", mechanism="SCRAM-SHA-256", iterations=4096, salted_password=b"x" * 32)
    assert alter(acme, short, no_salt) == [("bob", ErrorCode.UNACCEPTABLE_CREDENTIAL), ("carol", ErrorCode.UNACCEPTABLE_CREDENTIAL)]


def test_a_users_alterations_apply_together_or_not_at_all_and_other_users_are_not_held_back(acme: TenantFixture) -> None:
    assert alter(acme, upsert("bob"), delete("bob", "SCRAM-SHA-512"), upsert("carol")) == [
        ("bob", ErrorCode.RESOURCE_NOT_FOUND),
        ("carol", ErrorCode.NO_ERROR),
    ]
    assert stored(acme) == {("carol", "SCRAM-SHA-256", 10000)}


def test_a_user_named_like_one_of_the_tenants_api_keys_is_refused(acme: TenantFixture) -> None:
    key_id = acme.secrets[Role.ADMIN][0]
    assert alter(acme, upsert(key_id)) == [(key_id, ErrorCode.UNACCEPTABLE_CREDENTIAL)]


def test_the_same_name_in_two_tenants_is_two_users_and_neither_touches_the_other(acme: TenantFixture, globex: TenantFixture) -> None:
    assert alter(acme, upsert("alice")) == [("alice", ErrorCode.NO_ERROR)]
    assert alter(globex, delete("alice")) == [("alice", ErrorCode.RESOURCE_NOT_FOUND)]
    assert alter(globex, upsert("alice", "SCRAM-SHA-512", 5000)) == [("alice", ErrorCode.NO_ERROR)]
    assert stored(acme) == {("alice", "SCRAM-SHA-256", 10000)} and stored(globex) == {("alice", "SCRAM-SHA-512", 5000)}
    listed = globex.client(Role.ADMIN).get("/api/v1/scram-users").json()["data"]
    assert [(user["name"], user["credentials"]) for user in listed] == [("alice", [{"mechanism": "SCRAM-SHA-512", "iterations": 5000}])]


def test_members_list_scram_users_over_rest_and_only_admins_delete_them(acme: TenantFixture, globex: TenantFixture) -> None:
    alter(acme, upsert("alice"), upsert("alice", "SCRAM-SHA-512"))
    response = acme.client(Role.ADMIN).get("/api/v1/scram-users")
    assert response.status_code == 200
    [user] = response.json()["data"]
    assert user["login_name"] == f"alice@{acme.tenant.public_id}" and user["principal"] == "User:alice"
    assert [item["mechanism"] for item in user["credentials"]] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert "salt" not in response.content.decode() and "stored_key" not in response.content.decode()
    assert acme.client(Role.VIEWER).get("/api/v1/scram-users").json() == response.json()  # every member reads, as service accounts
    assert acme.client(Role.DEVELOPER).delete("/api/v1/scram-users/alice").status_code == 403
    assert globex.client(Role.ADMIN).delete("/api/v1/scram-users/alice").status_code == 404  # another tenant's user is not found
    assert acme.client(Role.ADMIN).delete("/api/v1/scram-users/alice").status_code == 204
    assert stored(acme) == set()
    assert acme.client(Role.ADMIN).delete("/api/v1/scram-users/alice").status_code == 404
