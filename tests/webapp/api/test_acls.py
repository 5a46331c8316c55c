"""``/api/v1/acls``: create, duplicates, filters (including MATCH), delete by filter."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role, ServiceAccount
from webapp.catalog.models import AclBinding
from webapp.provisioning.models import JobKind, ProvisioningJob

pytestmark = pytest.mark.django_db

ACLS = "/api/v1/acls"


def binding(principal: str, **fields: str) -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": principal,
        "operation": "READ",
        "permission": "ALLOW",
        **fields,
    }


def test_create_acl_returns_binding_and_security_job(acme: TenantFixture, service_account: ServiceAccount) -> None:
    response = acme.client(Role.ADMIN).post(ACLS, binding(service_account.principal), format="json")

    assert response.status_code == 201, response.json()
    acl = response.json()["acl"]
    assert acl["kind"] == "KafkaAcl"
    assert (acl["principal"], acl["host"], acl["operation"]) == (service_account.principal, "*", "READ")
    assert response.json()["job"]["kind"] == JobKind.SYNC_SECURITY
    assert AclBinding.objects.get().public_id == acl["id"]


def test_duplicate_acl_answers_409(acme: TenantFixture, service_account: ServiceAccount) -> None:
    assert acme.client(Role.ADMIN).post(ACLS, binding(service_account.principal), format="json").status_code == 201

    response = acme.client(Role.ADMIN).post(ACLS, binding(service_account.principal), format="json")

    assert response.status_code == 409
    assert AclBinding.objects.count() == 1


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"principal": "User:sa-doesnotexist"}, "principal"),
        ({"principal": "Group:x"}, "principal"),
        ({"resource_type": "GROUP", "operation": "WRITE"}, "operation"),
        ({"resource_type": "TRANSACTIONAL_ID", "operation": "READ"}, "operation"),
        ({"resource_type": "CLUSTER", "resource_name": "orders"}, "resource_name"),
        ({"resource_name": "a~b"}, "resource_name"),
        ({"resource_name": ""}, "resource_name"),
        ({"host": "not-an-ip"}, "host"),
        ({"operation": "FLY"}, "operation"),
    ],
)
def test_invalid_acl_answers_400_with_the_field(acme: TenantFixture, service_account: ServiceAccount, fields: dict[str, str], field: str) -> None:
    response = acme.client(Role.ADMIN).post(ACLS, {**binding(service_account.principal), **fields}, format="json")

    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert not AclBinding.objects.exists()


def test_a_transactional_id_binding_reaches_the_brokers_snapshot(acme: TenantFixture, service_account: ServiceAccount) -> None:
    from broker_nodes.security.authorizer import Operation, ResourceType
    from broker_nodes.security.snapshot import SecuritySnapshot
    from webapp.provisioning.models import SnapshotKind
    from webapp.provisioning.snapshots import build_snapshots

    fields = {"resource_type": "TRANSACTIONAL_ID", "resource_name": "etl-", "pattern_type": "PREFIXED", "operation": "WRITE"}
    response = acme.client(Role.ADMIN).post(ACLS, binding(service_account.principal, **fields), format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["acl"]["resource_type"] == "TRANSACTIONAL_ID"
    security = build_snapshots([SnapshotKind.SECURITY]).security
    assert security is not None
    [acl] = SecuritySnapshot.from_request(security).acls_of(acme.tenant.public_id)
    assert (acl.resource_type, acl.resource_name, acl.operation) == (ResourceType.TRANSACTIONAL_ID, "etl-", Operation.WRITE)


def test_principal_of_another_tenant_is_refused(acme: TenantFixture, globex: TenantFixture) -> None:
    foreign = ServiceAccount.objects.create(tenant=globex.tenant, name="spy")

    response = acme.client(Role.ADMIN).post(ACLS, binding(foreign.principal), format="json")

    assert response.status_code == 400
    assert "principal" in response.json()["errors"]


def test_list_filters_exactly_and_with_match(acme: TenantFixture, service_account: ServiceAccount) -> None:
    client = acme.client(Role.ADMIN)
    for fields in (
        {"resource_name": "orders"},
        {"resource_name": "ord", "pattern_type": "PREFIXED"},
        {"resource_name": "*"},
        {"resource_name": "payments", "operation": "WRITE"},
        {"resource_type": "GROUP", "resource_name": "orders"},
    ):
        assert client.post(ACLS, binding(service_account.principal, **fields), format="json").status_code == 201

    def names(parameters: dict[str, str]) -> list[tuple[str, str, str]]:
        response = acme.client(Role.VIEWER).get(ACLS, parameters)
        assert response.status_code == 200, response.json()
        return sorted((acl["resource_type"], acl["resource_name"], acl["pattern_type"]) for acl in response.json()["results"])

    assert len(names({})) == 5
    assert names({"resource_type": "TOPIC", "resource_name": "orders"}) == [("TOPIC", "orders", "LITERAL")]
    assert names({"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "MATCH"}) == [
        ("TOPIC", "*", "LITERAL"),
        ("TOPIC", "ord", "PREFIXED"),
        ("TOPIC", "orders", "LITERAL"),
    ]
    assert names({"operation": "WRITE"}) == [("TOPIC", "payments", "LITERAL")]
    assert acme.client(Role.VIEWER).get(ACLS, {"operation": "FLY"}).status_code == 400


def test_delete_by_filter_removes_only_matches_and_records_one_job(acme: TenantFixture, service_account: ServiceAccount) -> None:
    client = acme.client(Role.ADMIN)
    for operation in ("READ", "WRITE", "DESCRIBE"):
        assert client.post(ACLS, binding(service_account.principal, operation=operation), format="json").status_code == 201
    jobs_before = ProvisioningJob.objects.count()

    response = client.delete(f"{ACLS}?resource_type=TOPIC&resource_name=orders&operation=WRITE")

    assert response.status_code == 200
    assert [acl["operation"] for acl in response.json()["data"]] == ["WRITE"]
    assert response.json()["job"]["kind"] == JobKind.SYNC_SECURITY
    assert sorted(AclBinding.objects.values_list("operation", flat=True)) == ["DESCRIBE", "READ"]
    assert ProvisioningJob.objects.count() == jobs_before + 1


def test_delete_matching_nothing_returns_no_job_and_bare_delete_is_refused(acme: TenantFixture) -> None:
    nothing = acme.client(Role.ADMIN).delete(f"{ACLS}?resource_type=GROUP")
    bare = acme.client(Role.ADMIN).delete(ACLS)

    assert nothing.status_code == 200 and nothing.json() == {"kind": "KafkaAclList", "data": [], "job": None}
    assert bare.status_code == 400 and "resource_type" in bare.json()["errors"]
