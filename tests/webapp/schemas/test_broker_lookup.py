"""The controller's SchemaSubjects answer for brokers' schema validation: a tenant's own ids only."""

from __future__ import annotations

import json

import pytest

from grpc_protos.weir.v1 import controller_pb2
from tests.webapp.api.conftest import TenantFixture
from webapp.controller.schema_lookup import lookup_schema_subjects
from webapp.schemas.actions.register import register
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db

SCHEMA = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})


def ask(tenant_id: str, schema_id: int) -> controller_pb2.SchemaSubjectsResponse:
    return lookup_schema_subjects(controller_pb2.SchemaSubjectsRequest(tenant_id=tenant_id, schema_id=schema_id))


def test_subjects_of_a_tenants_id_and_nothing_of_another_tenants(acme: TenantFixture, globex: TenantFixture) -> None:
    schema_id = register(acme.actor(), "orders-value", {"schema": SCHEMA}).schema_id
    assert register(acme.actor(), "audit-value", {"schema": SCHEMA}).schema_id == schema_id
    answer = ask(acme.tenant.public_id, schema_id)
    assert (answer.error_code, list(answer.subjects)) == (ErrorCode.NO_ERROR, ["audit-value", "orders-value"])
    assert list(ask(globex.tenant.public_id, schema_id).subjects) == []
    assert list(ask(acme.tenant.public_id, schema_id + 1000).subjects) == []


def test_an_unknown_tenant_is_an_invalid_request(acme: TenantFixture) -> None:
    assert ask("tn-nobody", 1).error_code == ErrorCode.INVALID_REQUEST
    assert ask("", 1).error_code == ErrorCode.INVALID_REQUEST
