"""The REST key list and key detail say what each key acts with (``access``): an admin's or owner's
cluster key is the tenant's cluster administrator, a developer's or any service account's is left
to ACLs, a cloud key acts with its owner's role; the schema documents the values. A role change
across the admin line answers with the SYNC_SECURITY job it recorded, and the keys follow."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.models import ApiKeyKind, Role

pytestmark = pytest.mark.django_db


def cluster_key_id(acme: TenantFixture, owner: KeyOwner) -> str:
    return do_create_key(acme.actor(Role.OWNER), ApiKeyKind.CLUSTER, owner, "").key.key_id


def test_keys_say_which_act_as_cluster_administrator_and_a_role_change_returns_its_job(acme: TenantFixture) -> None:
    admins = cluster_key_id(acme, KeyOwner(membership=acme.members[Role.ADMIN]))
    developers = cluster_key_id(acme, KeyOwner(membership=acme.members[Role.DEVELOPER]))
    administrator_account = do_create_service_account(acme.actor(Role.OWNER), "ops-app", "", Role.ADMIN)
    applications = cluster_key_id(acme, KeyOwner(service_account=administrator_account))
    viewer = acme.client(Role.VIEWER)

    listing = viewer.get("/api/v1/api-keys", {"page_size": 100})
    assert listing.status_code == 200, listing.content
    access = {key["id"]: key["access"] for key in listing.json()["results"]}
    assert access[admins] == "cluster_admin"
    assert access[developers] == "acls"
    assert access[applications] == "acls", "a service account's key is left to ACLs whatever its role"
    assert access[acme.key(Role.OWNER).key_id] == "role", "a cloud key acts with its owner's role on the REST API"

    schema = viewer.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    documented = components["ApiKey"]["properties"]["access"]
    assert documented["allOf"] == [{"$ref": "#/components/schemas/ApiKeyAccessEnum"}] and "cluster administrator" in documented["description"]
    assert components["ApiKeyAccessEnum"]["enum"] == ["cluster_admin", "acls", "role"]
    role_change = schema["paths"]["/api/v1/members/{member_id}"]["patch"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert role_change == {"$ref": "#/components/schemas/MemberRoleChange"}
    assert components["MemberRoleChange"]["properties"]["job"]["allOf"] == [{"$ref": "#/components/schemas/JobSummary"}]

    owner = acme.client(Role.OWNER)
    admin_id = acme.members[Role.ADMIN].public_id
    demoted = owner.patch(f"/api/v1/members/{admin_id}", {"role": Role.DEVELOPER}, format="json")
    assert demoted.status_code == 200, demoted.content
    body = demoted.json()
    assert (body["role"], body["job"]["kind"], body["job"]["target"], body["job"]["state"]) == ("developer", "SYNC_SECURITY", admin_id, "PENDING")
    assert owner.get(body["job"]["self"]).status_code == 200
    detail = viewer.get(f"/api/v1/api-keys/{admins}")
    assert (detail.status_code, detail.json()["access"]) == (200, "acls")

    sideways = owner.patch(f"/api/v1/members/{admin_id}", {"role": Role.VIEWER}, format="json")
    assert (sideways.status_code, sideways.json()["job"]) == (200, None), "not across the admin line: nothing for the brokers"
    promoted = owner.patch(f"/api/v1/members/{admin_id}", {"role": Role.OWNER}, format="json")
    assert promoted.json()["job"]["kind"] == "SYNC_SECURITY"
    assert viewer.get(f"/api/v1/api-keys/{admins}").json()["access"] == "cluster_admin"

    revoked = owner.delete(f"/api/v1/api-keys/{developers}")
    assert (revoked.status_code, revoked.json()["state"], revoked.json()["access"], revoked.json()["job"]["kind"]) == (200, "REVOKED", "acls", "SYNC_SECURITY")
