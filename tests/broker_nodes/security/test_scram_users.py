"""Tenants' SCRAM users in the broker's security snapshot: they log in as ``<name>@<tenant id>``
with SCRAM and act as ``User:<name>`` of that tenant under its ACLs; the same name in another
tenant is another user; a deleted user or a changed password is refused at the next request.

kafka-python's SCRAM client plays the client (independent of Weir's code); the salted password
is computed as Kafka's AlterUserScramCredentials carries it (``weir.admin_scram.salted_password``)
and turned into StoredKey/ServerKey by the control plane's function.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.sasl.scram import ScramClient

from broker_nodes.clock import ManualClock
from broker_nodes.cluster_state import InvalidSnapshotError
from broker_nodes.security.access import CallContext
from broker_nodes.security.authenticator import AuthenticationError, Authenticator
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.scram import ScramExchange
from broker_nodes.security.snapshot import SecuritySnapshot, SecurityStore
from broker_nodes.server.topic_forwarding import forwarded_caller
from grpc_protos.weir.v1 import admin_pb2
from webapp.accounts.scram import credential_from_salted_password
from weir.admin_scram import salted_password, scram_login_name

TENANT, OTHER_TENANT = "tn-scramusers1", "tn-scramusers2"
SALT = b"a fixed salt of the test"


def user_entry(tenant_id: str, name: str, password: str, mechanism: str = "SCRAM-SHA-512", iterations: int = 8192) -> admin_pb2.ScramUser:
    derived = credential_from_salted_password(mechanism, SALT, iterations, salted_password(mechanism, password.encode(), SALT, iterations))
    credential = admin_pb2.ScramCredential(mechanism=mechanism, salt=SALT, iterations=iterations, stored_key=derived.stored_key, server_key=derived.server_key)
    return admin_pb2.ScramUser(tenant_id=tenant_id, name=name, scram=[credential])


def writer_acl(tenant_id: str, principal: str) -> admin_pb2.AclBinding:
    return admin_pb2.AclBinding(
        tenant_id=tenant_id,
        principal=principal,
        resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
        resource_name="orders",
        pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL,
        operation=admin_pb2.ACL_OPERATION_WRITE,
        permission=admin_pb2.ACL_PERMISSION_ALLOW,
        host="*",
    )


def store_snapshot(store: SecurityStore, version: int, *users: admin_pb2.ScramUser) -> None:
    acls = [writer_acl(TENANT, "User:alice")]
    store.store(SecuritySnapshot.from_request(admin_pb2.ApplySecurityRequest(version=version, scram_users=users, acls=acls)))


@pytest.fixture
def store(tmp_path: Path) -> SecurityStore:
    store = SecurityStore(tmp_path)
    store_snapshot(store, 1, user_entry(TENANT, "alice", "alice-password"), user_entry(OTHER_TENANT, "alice", "other-password"))
    return store


@pytest.fixture
def authenticator(store: SecurityStore) -> Authenticator:
    return Authenticator(security_required=True, internal_token="t" * 32, security_store=store, clock=ManualClock())


def log_in(authenticator: Authenticator, login: str, password: str, mechanism: str = "SCRAM-SHA-512") -> tuple[CallContext, bytes]:
    """A full SCRAM exchange as ``login``; the caller and the StoredKey the connection keeps."""
    exchange = ScramExchange(mechanism, authenticator.scram_credential)
    client = ScramClient(login, password, mechanism)
    client.process_server_first_message(exchange.first(client.first_message()))
    client.process_server_final_message(exchange.final(client.final_message()))  # checks the server's signature too
    stored_key = exchange.credential.stored_key
    return authenticator.authenticate_scram_key(login, mechanism, stored_key, "127.0.0.1"), stored_key


def test_a_scram_user_logs_in_as_name_at_tenant_and_acts_as_its_principal_under_its_tenants_acls(authenticator: Authenticator) -> None:
    call, _ = log_in(authenticator, scram_login_name("alice", TENANT), "alice-password")
    assert (call.tenant_id, call.principal, call.cluster_admin, call.scram_user) == (TENANT, "User:alice", False, "alice")
    forwarded = forwarded_caller(call)  # what the controller is told of the caller's administration
    assert (forwarded.tenant_id, forwarded.principal, forwarded.scram_user, forwarded.api_key) == (TENANT, "User:alice", "alice", "")
    assert call.may(Operation.WRITE, ResourceType.TOPIC, "orders")
    assert not call.may(Operation.READ, ResourceType.TOPIC, "orders")  # Kafka's rule: no matching ACL, denied
    assert not call.may(Operation.ALTER, ResourceType.CLUSTER, "kafka-cluster")


def test_the_same_name_in_another_tenant_is_another_user_with_its_own_password_and_acls(authenticator: Authenticator) -> None:
    other, _ = log_in(authenticator, scram_login_name("alice", OTHER_TENANT), "other-password")
    assert (other.tenant_id, other.principal) == (OTHER_TENANT, "User:alice")
    assert not other.may(Operation.WRITE, ResourceType.TOPIC, "orders")  # the first tenant's ACL is not the second's
    exchange = ScramExchange("SCRAM-SHA-512", authenticator.scram_credential)
    client = ScramClient(scram_login_name("alice", OTHER_TENANT), "alice-password", "SCRAM-SHA-512")
    client.process_server_first_message(exchange.first(client.first_message()))
    with pytest.raises(Exception, match="the proof does not match"):
        exchange.final(client.final_message())


@pytest.mark.parametrize("login", ["alice", "alice@", "alice@tn-nosuchtenant", "bob@tn-scramusers1"])
def test_a_login_that_names_no_user_of_a_tenant_is_refused_at_the_client_first_message(authenticator: Authenticator, login: str) -> None:
    exchange = ScramExchange("SCRAM-SHA-512", authenticator.scram_credential)
    with pytest.raises(AuthenticationError, match="invalid"):
        exchange.first(f"n,,n={login},r=abc".encode())


def test_a_mechanism_the_user_has_no_credential_for_is_refused(authenticator: Authenticator) -> None:
    exchange = ScramExchange("SCRAM-SHA-256", authenticator.scram_credential)
    with pytest.raises(AuthenticationError, match="no credential for this mechanism"):
        exchange.first(f"n,,n={scram_login_name('alice', TENANT)},r=abc".encode())


def test_a_deleted_user_or_a_new_password_is_refused_at_the_next_request(authenticator: Authenticator, store: SecurityStore) -> None:
    login = scram_login_name("alice", TENANT)
    _, stored_key = log_in(authenticator, login, "alice-password")
    store_snapshot(store, 2, user_entry(TENANT, "alice", "a-new-password"))
    with pytest.raises(AuthenticationError, match="invalid SCRAM user or password"):
        authenticator.authenticate_scram_key(login, "SCRAM-SHA-512", stored_key, "127.0.0.1")
    log_in(authenticator, login, "a-new-password")
    store_snapshot(store, 3)
    with pytest.raises(AuthenticationError):
        log_in(authenticator, login, "a-new-password")


def test_scram_users_survive_a_restart_from_the_snapshot_file(store: SecurityStore, tmp_path: Path) -> None:
    document = json.loads(store.path.read_text(encoding="utf-8"))
    assert "alice-password" not in store.path.read_text(encoding="utf-8")
    reloaded = SecurityStore(tmp_path)
    reloaded.load()
    assert reloaded.snapshot is not None and store.snapshot is not None
    assert reloaded.snapshot.scram_users == store.snapshot.scram_users
    assert sorted(user["tenant_id"] for user in document["snapshot"]["scram_users"]) == [TENANT, OTHER_TENANT]
    assert sorted(reloaded.snapshot.scram_users_of(TENANT)) == ["alice"]


@pytest.mark.parametrize(
    ("user", "problem"),
    [
        (admin_pb2.ScramUser(tenant_id=TENANT, name="carol"), "has no credential"),
        (admin_pb2.ScramUser(tenant_id="", name="carol"), "valid tenant id"),
        (user_entry(TENANT, "carol", "password", iterations=100), "iterations must be"),
    ],
)
def test_a_snapshot_with_an_unusable_scram_user_is_refused_naming_it(user: admin_pb2.ScramUser, problem: str) -> None:
    with pytest.raises(InvalidSnapshotError, match=problem):
        SecuritySnapshot.from_request(admin_pb2.ApplySecurityRequest(version=1, scram_users=[user]))
