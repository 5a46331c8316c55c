"""SchemaSubjects for brokers: which subjects a tenant's schema id is a live version of.

A broker validating records (``confluent.value.schema.validation``) asks this once per
(tenant, schema id) and caches the answer (``broker_nodes/schema_ids.py``). The registry's
facade keeps tenants apart: another tenant's id answers no subjects, exactly like an id that
was never registered.
"""

from __future__ import annotations

from grpc_protos.weir.v1 import controller_pb2
from webapp.accounts.facade import Tenant
from webapp.schemas.facade import schema_subjects
from weir.errors import ErrorCode


def lookup_schema_subjects(request: controller_pb2.SchemaSubjectsRequest) -> controller_pb2.SchemaSubjectsResponse:
    """The tenant's live subjects of ``request.schema_id``; INVALID_REQUEST for no or an unknown tenant."""
    if not request.tenant_id:
        return controller_pb2.SchemaSubjectsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message="schema ids belong to a tenant; no tenant was named")
    tenant = Tenant.objects.filter(public_id=request.tenant_id).first()
    if tenant is None:
        return controller_pb2.SchemaSubjectsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=f"no tenant {request.tenant_id!r}")
    return controller_pb2.SchemaSubjectsResponse(subjects=schema_subjects(tenant, request.schema_id))
