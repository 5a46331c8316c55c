"""``/sign-up``, ``/tenant``, ``/members``, ``/invitations``, ``/quotas``, ``/jobs``, ``/brokers``."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.webapp.api.conftest import PASSWORD, TenantFixture
from webapp.accounts.models import Membership, Role, Tenant
from webapp.catalog.models import Quota
from webapp.fleet.models import BrokerNode
from webapp.provisioning.models import JobKind

pytestmark = pytest.mark.django_db


def test_sign_up_creates_user_tenant_owner_and_quota_and_signs_in() -> None:
    client = APIClient()

    response = client.post("/api/v1/sign-up", {"username": "ada", "email": "ada@example.com", "password": PASSWORD, "tenant_name": "Analytical"}, format="json")

    assert response.status_code == 201, response.json()
    tenant = Tenant.objects.get(public_id=response.json()["tenant"]["id"])
    assert Membership.objects.get(tenant=tenant).role == Role.OWNER
    assert Quota.objects.filter(tenant=tenant).exists()
    assert client.get("/api/v1/tenant").json()["id"] == tenant.public_id


@pytest.mark.parametrize(
    "body,field",
    [
        ({"password": "123"}, "password"),
        ({"email": "not-an-email"}, "email"),
        ({"tenant_name": " "}, "tenant_name"),
        ({"username": "bad name!"}, "username"),
    ],
)
def test_sign_up_with_bad_fields_answers_400_and_creates_nothing(body: dict[str, str], field: str) -> None:
    payload = {"username": "ada", "email": "ada@example.com", "password": PASSWORD, "tenant_name": "Analytical", **body}

    response = APIClient().post("/api/v1/sign-up", payload, format="json")

    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert not Tenant.objects.exists() and not get_user_model().objects.exists()


def test_sign_up_with_taken_username_answers_409(acme: TenantFixture) -> None:
    payload = {"username": "ACME-owner", "email": "x@example.com", "password": PASSWORD, "tenant_name": "Other"}

    assert APIClient().post("/api/v1/sign-up", payload, format="json").status_code == 409
    assert Tenant.objects.count() == 1


def test_owner_renames_tenant_and_plan_downgrade_must_fit(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    client = acme.client(Role.OWNER)
    assert client.post("/api/v1/topics", {"topic_name": "big", "partitions_count": 20}, format="json").status_code == 201

    renamed = client.patch("/api/v1/tenant", {"name": "Acme Corp"}, format="json")
    downgraded = client.patch("/api/v1/tenant", {"plan": "free"}, format="json")

    assert renamed.status_code == 200 and renamed.json()["name"] == "Acme Corp"
    # Well formed, refused by what the tenant holds: a conflict with its state, naming the field.
    assert downgraded.status_code == 409 and "plan" in downgraded.json()["errors"]
    assert Tenant.objects.get().plan == "standard"


def test_members_change_role_and_last_owner_is_protected(acme: TenantFixture) -> None:
    client = acme.client(Role.OWNER)
    owner_id = acme.members[Role.OWNER].public_id
    viewer_id = acme.members[Role.VIEWER].public_id

    listed = acme.client(Role.VIEWER).get("/api/v1/members").json()["results"]
    promoted = client.patch(f"/api/v1/members/{viewer_id}", {"role": "developer"}, format="json")
    demote_last_owner = client.patch(f"/api/v1/members/{owner_id}", {"role": "admin"}, format="json")
    remove_last_owner = client.delete(f"/api/v1/members/{owner_id}")
    removed = client.delete(f"/api/v1/members/{viewer_id}")

    assert {member["role"] for member in listed} == set(Role.values)
    assert promoted.status_code == 200 and promoted.json()["role"] == "developer"
    assert demote_last_owner.status_code == 409 and list(demote_last_owner.json()["errors"]) == ["role"]
    assert remove_last_owner.status_code == 409
    assert removed.status_code == 200
    assert not Membership.objects.filter(public_id=viewer_id).exists()
    assert Membership.objects.get(public_id=owner_id).role == Role.OWNER


def test_invitation_is_accepted_once_by_a_new_user(acme: TenantFixture) -> None:
    invited = acme.client(Role.ADMIN).post("/api/v1/invitations", {"email": "grace@example.com", "role": "developer"}, format="json")
    token = invited.json()["token"]
    body = {"token": token, "username": "grace", "password": PASSWORD}

    accepted = APIClient().post("/api/v1/invitations/accept", body, format="json")
    again = APIClient().post("/api/v1/invitations/accept", {**body, "username": "grace2"}, format="json")

    assert invited.status_code == 201
    assert "token" not in acme.client(Role.ADMIN).get("/api/v1/invitations").content.decode()
    assert accepted.status_code == 201, accepted.json()
    assert accepted.json()["role"] == "developer" and accepted.json()["email"] == "grace@example.com"
    assert again.status_code == 404


def test_inviting_an_existing_member_answers_409(acme: TenantFixture) -> None:
    response = acme.client(Role.ADMIN).post("/api/v1/invitations", {"email": "viewer@acme.example", "role": "admin"}, format="json")

    assert response.status_code == 409


def test_quota_is_set_within_the_plan(acme: TenantFixture) -> None:
    client = acme.client(Role.ADMIN)
    limit = acme.tenant.limits.produce_bytes_per_second

    before = client.get("/api/v1/quotas").json()
    updated = client.put("/api/v1/quotas", {"produce_bytes_per_second": 1000, "consume_bytes_per_second": None}, format="json")
    too_high = client.put("/api/v1/quotas", {"produce_bytes_per_second": limit + 1, "consume_bytes_per_second": None}, format="json")
    too_low = client.put("/api/v1/quotas", {"produce_bytes_per_second": 1000, "consume_bytes_per_second": 0}, format="json")

    assert before["effective_produce_bytes_per_second"] == limit
    assert updated.status_code == 200 and updated.json()["effective_produce_bytes_per_second"] == 1000
    assert updated.json()["job"]["kind"] == JobKind.SYNC_SECURITY
    # Above the plan's rate: well formed, refused by the tenant's plan (409); below 1: invalid (400).
    assert too_high.status_code == 409 and set(too_high.json()["errors"]) == {"produce_bytes_per_second"}
    assert too_low.status_code == 400 and set(too_low.json()["errors"]) == {"consume_bytes_per_second"}
    assert Quota.objects.get().produce_bytes_per_second == 1000


def test_jobs_are_listed_with_state_filter(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    job_id = acme.client().post("/api/v1/topics", {"topic_name": "t"}, format="json").json()["job"]["id"]

    pending = acme.client(Role.VIEWER).get("/api/v1/jobs", {"state": "PENDING"}).json()["results"]
    failed = acme.client(Role.VIEWER).get("/api/v1/jobs", {"state": "FAILED"}).json()["results"]
    single = acme.client(Role.VIEWER).get(f"/api/v1/jobs/{job_id}").json()

    assert [job["id"] for job in pending] == [job_id]
    assert failed == []
    assert single["kind"] == JobKind.CREATE_TOPIC and single["tenant_id"] == acme.tenant.public_id


def test_operator_session_sees_brokers_with_every_tenants_partitions_and_every_tenants_jobs(
    acme: TenantFixture, globex: TenantFixture, registered_broker: BrokerNode
) -> None:
    acme.client().post("/api/v1/topics", {"topic_name": "a"}, format="json")
    globex.client().post("/api/v1/topics", {"topic_name": "g"}, format="json")
    operator = get_user_model().objects.create_user(username="operator", password=PASSWORD, is_staff=True)
    client = APIClient()
    client.force_login(operator)

    brokers = client.get("/api/v1/brokers")
    jobs = client.get("/api/v1/jobs").json()["results"]

    assert brokers.status_code == 200
    assert brokers.json()["data"] == [
        {**brokers.json()["data"][0], "broker_id": 1, "state": "ONLINE", "leader_partitions_count": 2, "replica_partitions_count": 2}
    ]
    assert {job["tenant_id"] for job in jobs} == {acme.tenant.public_id, globex.tenant.public_id}
    assert client.get("/api/v1/topics").status_code == 403  # an operator is not a tenant member
