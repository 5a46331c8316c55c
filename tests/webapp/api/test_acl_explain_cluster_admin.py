"""GET /acls:explain for a member's principal: an admin's or owner's keys act as the tenant's cluster
administrator (no ACL consulted, as the brokers decide), a developer's by the bindings, and a member
of another tenant is only a principal no binding names."""

from __future__ import annotations

import pytest

from webapp.accounts.facade import Role

pytestmark = pytest.mark.django_db


def test_an_admin_members_principal_is_allowed_without_bindings_and_a_developers_is_not(acme, globex) -> None:  # type: ignore[no-untyped-def]
    viewer = acme.client(Role.VIEWER)

    def ask(principal: str) -> dict:  # type: ignore[type-arg]
        query = {"principal": principal, "operation": "WRITE", "resource_type": "TOPIC", "resource_name": "orders"}
        response = viewer.get("/api/v1/acls:explain", query)
        assert response.status_code == 200, response.content
        return response.json()  # type: ignore[no-any-return]

    admin = ask(acme.members[Role.ADMIN].principal)
    assert admin["allowed"] and admin["deciding_acl"] is None and "cluster administrator" in admin["reason"]
    developer = ask(acme.members[Role.DEVELOPER].principal)
    assert not developer["allowed"] and "no binding allows" in developer["reason"]
    stranger = ask(globex.members[Role.OWNER].principal)
    assert not stranger["allowed"] and "cluster administrator" not in stranger["reason"]
