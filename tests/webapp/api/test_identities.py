"""``/service-accounts`` and ``/api-keys``; cloud-key authentication on REST."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import TenantFixture, basic_client
from webapp.accounts.actions.key_use import SeenApplication, do_record_key_applications
from webapp.accounts.api_keys import hash_secret
from webapp.accounts.models import ApiKey, Role, ServiceAccount
from webapp.provisioning.models import JobKind

pytestmark = pytest.mark.django_db

ACCOUNTS = "/api/v1/service-accounts"
KEYS = "/api/v1/api-keys"


def test_service_account_lifecycle(acme: TenantFixture) -> None:
    client = acme.client(Role.ADMIN)

    created = client.post(ACCOUNTS, {"display_name": "billing", "description": "bills", "role": "viewer"}, format="json")
    account_id = created.json()["id"]
    duplicate = client.post(ACCOUNTS, {"display_name": "billing"}, format="json")
    renamed = client.patch(f"{ACCOUNTS}/{account_id}", {"display_name": "invoicing"}, format="json")
    listed = acme.client(Role.VIEWER).get(ACCOUNTS, {"name": "invo"}).json()["results"]
    deleted = client.delete(f"{ACCOUNTS}/{account_id}")

    assert created.status_code == 201 and account_id.startswith("sa-")
    assert created.json()["principal"] == f"User:{account_id}"
    assert duplicate.status_code == 409
    assert renamed.status_code == 200 and renamed.json()["display_name"] == "invoicing"
    assert [account["id"] for account in listed] == [account_id]
    assert deleted.status_code == 200
    assert not ServiceAccount.objects.exists()


def test_admin_cannot_create_owner_service_account(acme: TenantFixture) -> None:
    response = acme.client(Role.ADMIN).post(ACCOUNTS, {"display_name": "root", "role": "owner"}, format="json")

    assert response.status_code == 400
    assert "role" in response.json()["errors"]


def test_create_cluster_key_for_service_account_shows_secret_once_and_syncs_brokers(acme: TenantFixture, service_account: ServiceAccount) -> None:
    created = acme.client(Role.ADMIN).post(KEYS, {"kind": "cluster", "owner": service_account.public_id}, format="json")

    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["secret"].startswith("weir_cluster_")
    assert body["owner"] == {"id": service_account.public_id, "kind": "ServiceAccount"}
    assert body["job"]["kind"] == JobKind.SYNC_SECURITY
    key = ApiKey.objects.get(key_id=body["id"])
    assert key.secret_sha256 == hash_secret(body["secret"])
    listed = acme.client(Role.VIEWER).get(KEYS).json()["results"]
    fetched = acme.client(Role.VIEWER).get(f"{KEYS}/{body['id']}").json()
    assert all("secret" not in entry for entry in listed) and "secret" not in fetched
    assert body["secret"] not in str(listed)


def test_key_detail_lists_the_applications_brokers_saw_using_it(acme: TenantFixture, service_account: ServiceAccount) -> None:
    key_id = acme.client(Role.ADMIN).post(KEYS, {"kind": "cluster", "owner": service_account.public_id}, format="json").json()["id"]
    do_record_key_applications({key_id: [SeenApplication("billing", "librdkafka", "2.5.0", "10.0.0.8", 1_700_000_000_000, 1_700_000_060_000)]})

    fetched = acme.client(Role.VIEWER).get(f"{KEYS}/{key_id}").json()

    assert fetched["applications"] == [
        {
            "client_id": "billing",
            "software_name": "librdkafka",
            "software_version": "2.5.0",
            "address": "10.0.0.8",
            "first_seen_at": "2023-11-14T22:13:20Z",
            "last_seen_at": "2023-11-14T22:14:20Z",
        }
    ]
    assert "applications" not in acme.client(Role.VIEWER).get(KEYS).json()["results"][0]  # the list stays one query


def test_developer_creates_own_key_but_not_for_others(acme: TenantFixture, service_account: ServiceAccount) -> None:
    own = acme.client(Role.DEVELOPER).post(KEYS, {"kind": "cloud"}, format="json")
    for_account = acme.client(Role.DEVELOPER).post(KEYS, {"kind": "cluster", "owner": service_account.public_id}, format="json")
    for_admin = acme.client(Role.DEVELOPER).post(KEYS, {"kind": "cloud", "owner": acme.members[Role.ADMIN].public_id}, format="json")

    assert own.status_code == 201
    assert own.json()["owner"] == {"id": acme.members[Role.DEVELOPER].public_id, "kind": "User"}
    assert own.json()["job"] is None
    assert for_account.status_code == 403
    assert for_admin.status_code == 403


def test_viewer_cannot_create_keys(acme: TenantFixture) -> None:
    assert acme.client(Role.VIEWER).post(KEYS, {"kind": "cloud"}, format="json").status_code == 403


def test_revoked_key_stops_authenticating(acme: TenantFixture) -> None:
    key_id, secret = acme.secrets[Role.DEVELOPER]
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200

    revoked = acme.client(Role.OWNER).delete(f"{KEYS}/{key_id}")

    assert revoked.status_code == 200 and revoked.json()["state"] == "REVOKED"
    assert revoked.json()["job"] is None  # a cloud key: brokers never knew it
    response = basic_client(key_id, secret).get("/api/v1/tenant")
    assert response.status_code == 401
    assert response.json()["error_code"] == 401
    assert "WWW-Authenticate" in response


def test_developer_cannot_revoke_someone_elses_key(acme: TenantFixture) -> None:
    response = acme.client(Role.DEVELOPER).delete(f"{KEYS}/{acme.secrets[Role.ADMIN][0]}")

    assert response.status_code == 403
    assert acme.key(Role.ADMIN).revoked_at is None


def test_revoking_a_cluster_key_records_a_security_job(acme: TenantFixture, service_account: ServiceAccount) -> None:
    key_id = acme.client(Role.ADMIN).post(KEYS, {"kind": "cluster", "owner": service_account.public_id}, format="json").json()["id"]

    response = acme.client(Role.ADMIN).delete(f"{KEYS}/{key_id}")

    assert response.json()["job"]["kind"] == JobKind.SYNC_SECURITY


@pytest.mark.parametrize("credentials", ["wrong-secret", "unknown-key", "cluster-key", "empty"])
def test_bad_credentials_on_rest_answer_401(acme: TenantFixture, service_account: ServiceAccount, credentials: str) -> None:
    key_id, secret = acme.secrets[Role.OWNER]
    if credentials == "wrong-secret":
        client = basic_client(key_id, secret + "x")
    elif credentials == "unknown-key":
        client = basic_client("NOSUCHKEY", secret)
    elif credentials == "cluster-key":
        body = acme.client(Role.ADMIN).post(KEYS, {"kind": "cluster", "owner": service_account.public_id}, format="json").json()
        client = basic_client(body["id"], body["secret"])
    else:
        client = basic_client("", "")

    response = client.get("/api/v1/topics")

    assert response.status_code == 401
    assert "results" not in response.json()


def test_anonymous_request_answers_401(acme: TenantFixture) -> None:
    from rest_framework.test import APIClient

    assert APIClient().get("/api/v1/topics").status_code == 401


def test_key_use_records_last_used_at(acme: TenantFixture) -> None:
    assert acme.key(Role.VIEWER).last_used_at is None

    acme.client(Role.VIEWER).get("/api/v1/tenant")

    assert acme.key(Role.VIEWER).last_used_at is not None


def test_service_account_key_acts_with_the_accounts_role(acme: TenantFixture, service_account: ServiceAccount) -> None:
    body = acme.client(Role.ADMIN).post(KEYS, {"kind": "cloud", "owner": service_account.public_id}, format="json").json()
    client = basic_client(body["id"], body["secret"])

    assert client.get("/api/v1/tenant").json()["role"] == Role.DEVELOPER
    assert client.post(ACCOUNTS, {"display_name": "x"}, format="json").status_code == 403
