"""What each role may do through the API: a table of (role, request) -> allowed or 403."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role, ServiceAccount
from webapp.fleet.models import BrokerNode

pytestmark = pytest.mark.django_db

ROLES = [Role.VIEWER, Role.DEVELOPER, Role.ADMIN, Role.OWNER]


def at_least(minimum: str) -> dict[str, bool]:
    rank = ROLES.index(minimum)
    return {role: ROLES.index(role) >= rank for role in ROLES}


CASES = [
    ("get", "/api/v1/topics", None, at_least(Role.VIEWER)),
    ("post", "/api/v1/topics", {"topic_name": "t", "partitions_count": 1}, at_least(Role.DEVELOPER)),
    ("get", "/api/v1/acls", None, at_least(Role.VIEWER)),
    ("post", "/api/v1/acls", {"resource_type": "TOPIC", "resource_name": "t", "principal": "User:*", "operation": "READ"}, at_least(Role.ADMIN)),
    ("delete", "/api/v1/acls?resource_type=ANY", None, at_least(Role.ADMIN)),
    ("get", "/api/v1/service-accounts", None, at_least(Role.VIEWER)),
    ("post", "/api/v1/service-accounts", {"display_name": "new-app"}, at_least(Role.ADMIN)),
    ("get", "/api/v1/api-keys", None, at_least(Role.VIEWER)),
    ("post", "/api/v1/api-keys", {"kind": "cloud"}, at_least(Role.DEVELOPER)),
    ("post", "/api/v1/api-keys", {"kind": "cluster", "owner": "{account}"}, at_least(Role.ADMIN)),
    ("get", "/api/v1/quotas", None, at_least(Role.VIEWER)),
    ("put", "/api/v1/quotas", {"produce_bytes_per_second": 1000, "consume_bytes_per_second": None}, at_least(Role.ADMIN)),
    ("get", "/api/v1/tenant", None, at_least(Role.VIEWER)),
    ("patch", "/api/v1/tenant", {"name": "Renamed"}, at_least(Role.OWNER)),
    ("get", "/api/v1/members", None, at_least(Role.VIEWER)),
    ("get", "/api/v1/invitations", None, at_least(Role.ADMIN)),
    ("post", "/api/v1/invitations", {"email": "new@example.com", "role": "developer"}, at_least(Role.ADMIN)),
    ("post", "/api/v1/invitations", {"email": "boss@example.com", "role": "owner"}, at_least(Role.OWNER)),
    ("patch", "/api/v1/members/{viewer}", {"role": "developer"}, at_least(Role.OWNER)),
    ("get", "/api/v1/jobs", None, at_least(Role.VIEWER)),
    ("get", "/api/v1/brokers", None, at_least(Role.VIEWER)),
    ("get", "/api/v1/brokers/1", None, at_least(Role.VIEWER)),
    ("get", "/api/v1/cluster", None, at_least(Role.VIEWER)),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("method,path,body,allowed", CASES, ids=[f"{case[0]} {case[1]} {str(case[2])[:30]}" for case in CASES])
def test_role_table(acme: TenantFixture, registered_broker: BrokerNode, role: str, method: str, path: str, body: dict | None, allowed: dict[str, bool]) -> None:
    account = ServiceAccount.objects.create(tenant=acme.tenant, name="table-app")
    names = {"account": account.public_id, "viewer": acme.members[Role.VIEWER].public_id}
    if body is not None:
        body = {key: value.format(**names) if isinstance(value, str) else value for key, value in body.items()}

    response = getattr(acme.client(role), method)(path.format(**names), body, format="json")

    if allowed[role]:
        assert response.status_code < 300, (response.status_code, response.content)
    else:
        assert response.status_code == 403, (response.status_code, response.content)
        assert response.json()["error_code"] == 403
