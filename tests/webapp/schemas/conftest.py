"""Fixtures of the registry tests: tenants with a member key per role (the REST API tests' own
fixtures), and a client that speaks to ``/schema-registry/`` as Confluent's clients do."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

# The REST API tests' tenant fixtures (a member key per role) and their fast password hashing, as they are.
from tests.webapp.api.conftest import TenantFixture, acme, fast_password_hashing, globex, tenant_factory  # noqa: F401
from webapp.accounts.models import Role

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass
class RegistryClient:
    """Calls ``/schema-registry/<path>`` with a cloud key; returns (status, JSON document)."""

    client: Client
    authorization: str | None

    def call(self, method: str, path: str, body: object = None, content_type: str = CONTENT_TYPE) -> tuple[int, Any]:
        headers = {"HTTP_AUTHORIZATION": self.authorization} if self.authorization else {}
        data = json.dumps(body) if body is not None else ""
        response = getattr(self.client, method.lower())(f"/schema-registry/{path}", data=data, content_type=content_type, **headers)
        text = response.content.decode()
        try:
            return response.status_code, json.loads(text)
        except ValueError:
            return response.status_code, text

    def get(self, path: str) -> tuple[int, Any]:
        return self.call("GET", path)

    def post(self, path: str, body: object) -> tuple[int, Any]:
        return self.call("POST", path, body)

    def put(self, path: str, body: object) -> tuple[int, Any]:
        return self.call("PUT", path, body)

    def delete(self, path: str) -> tuple[int, Any]:
        return self.call("DELETE", path)


def registry_client(fixture: TenantFixture | None, role: str = Role.OWNER) -> RegistryClient:
    if fixture is None:
        return RegistryClient(Client(), None)
    key_id, secret = fixture.secrets[role]
    token = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
    return RegistryClient(Client(), f"Basic {token}")


@pytest.fixture
def registry(acme: TenantFixture) -> RegistryClient:
    return registry_client(acme)
