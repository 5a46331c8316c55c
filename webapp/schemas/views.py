"""Confluent Schema Registry's REST API over a tenant's registry: thin handlers that read the
request, call one query or action, and shape Confluent's response documents."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse

from webapp.accounts.facade import Role
from webapp.schemas import queries, schema_types
from webapp.schemas.actions import delete, register, settings
from webapp.schemas.candidates import check_candidate
from webapp.schemas.errors import SchemaNotFound, SubjectNotFound
from webapp.schemas.http import CONTENT_TYPE, Call, endpoint
from webapp.schemas.models import Schema, SubjectVersion
from webapp.schemas.permissions import require
from webapp.schemas.queries import parse_version


def schema_document(schema: Schema) -> dict[str, Any]:
    """``schema``, plus ``schemaType`` unless AVRO and ``references`` when there are any (as Confluent)."""
    document: dict[str, Any] = {}
    if schema.schema_type != schema_types.AVRO:
        document["schemaType"] = schema.schema_type
    references = [{"name": ref.name, "subject": ref.subject, "version": ref.version} for ref in queries.references_of(schema)]
    if references:
        document["references"] = references
    document["schema"] = schema.text
    return document


def version_document(row: SubjectVersion) -> dict[str, Any]:
    return {"subject": row.subject, "version": row.version, "id": row.schema.schema_id, **schema_document(row.schema)}


def _reader(call: Call) -> None:
    require(call.actor, Role.VIEWER, "read the schema registry")


def root(call: Call) -> object:
    _reader(call)
    return {}


def list_subjects(call: Call) -> object:
    _reader(call)
    return queries.list_subjects(call.tenant, deleted=call.flag("deleted"), prefix=call.query("subjectPrefix"))


def lookup(call: Call, subject: str) -> object:
    _reader(call)
    candidate = check_candidate(call.tenant, call.body())
    rows = queries.subject_versions(call.tenant, subject, deleted=call.flag("deleted"))
    if not rows.exists():
        raise SubjectNotFound(subject)
    row = rows.filter(schema__fingerprint=candidate.fingerprint).select_related("schema").order_by("-version").first()
    if row is None:
        raise SchemaNotFound("Schema not found.")
    return version_document(row)


def delete_subject(call: Call, subject: str) -> object:
    return delete.delete_subject(call.actor, subject, permanent=call.flag("permanent"))


def list_versions(call: Call, subject: str) -> object:
    _reader(call)
    return queries.list_versions(call.tenant, subject, deleted=call.flag("deleted"))


def register_version(call: Call, subject: str) -> object:
    registration = register.register(call.actor, subject, call.body())
    return {"id": registration.schema_id}


def get_version(call: Call, subject: str, version: str) -> object:
    _reader(call)
    return version_document(queries.get_version(call.tenant, subject, parse_version(version), deleted=call.flag("deleted")))


def delete_version(call: Call, subject: str, version: str) -> object:
    return delete.delete_version(call.actor, subject, parse_version(version), permanent=call.flag("permanent"))


def get_version_schema(call: Call, subject: str, version: str) -> object:
    _reader(call)
    row = queries.get_version(call.tenant, subject, parse_version(version), deleted=call.flag("deleted"))
    return HttpResponse(row.schema.text, content_type=CONTENT_TYPE)


def referenced_by(call: Call, subject: str, version: str) -> object:
    _reader(call)
    return queries.referenced_by(call.tenant, subject, parse_version(version))


def contexts(call: Call) -> object:
    """Confluent's schema contexts: a tenant's registry is one context, the default one (".")."""
    _reader(call)
    return ["."]


def schema_types_list(call: Call) -> object:
    _reader(call)
    return schema_types.available_types()


def _schema_id(text: str) -> int:
    schema_id = int(text)
    if schema_id > queries.MAX_VERSION:
        raise SchemaNotFound(f"Schema {text} not found.")
    return schema_id


def get_schema(call: Call, schema_id: str) -> object:
    _reader(call)
    return schema_document(queries.get_schema(call.tenant, _schema_id(schema_id)))


def get_schema_text(call: Call, schema_id: str) -> object:
    _reader(call)
    return HttpResponse(queries.get_schema(call.tenant, _schema_id(schema_id)).text, content_type=CONTENT_TYPE)


def schema_versions(call: Call, schema_id: str) -> object:
    _reader(call)
    pairs = queries.schema_versions(call.tenant, _schema_id(schema_id), deleted=call.flag("deleted"), subject=call.query("subject") or None)
    return [{"subject": subject, "version": version} for subject, version in pairs]


def schema_subjects(call: Call, schema_id: str) -> object:
    _reader(call)
    pairs = queries.schema_versions(call.tenant, _schema_id(schema_id), deleted=call.flag("deleted"), subject=call.query("subject") or None)
    return sorted({subject for subject, _ in pairs})


def get_config(call: Call, subject: str | None = None) -> object:
    _reader(call)
    if subject is None:
        return {"compatibilityLevel": queries.effective_settings(call.tenant, None).compatibility}
    return {"compatibilityLevel": queries.subject_compatibility(call.tenant, subject, default_to_global=call.flag("defaultToGlobal"))}


def put_config(call: Call, subject: str | None = None) -> object:
    body = call.body()
    level = body.get("compatibility", body.get("compatibilityLevel"))
    return {"compatibility": settings.set_compatibility(call.actor, subject, level)}


def delete_config(call: Call, subject: str | None = None) -> object:
    return {"compatibilityLevel": settings.delete_compatibility(call.actor, subject)}


def get_mode(call: Call, subject: str | None = None) -> object:
    _reader(call)
    if subject is None:
        return {"mode": queries.effective_settings(call.tenant, None).mode}
    return {"mode": queries.subject_mode(call.tenant, subject, default_to_global=call.flag("defaultToGlobal"))}


def put_mode(call: Call, subject: str | None = None) -> object:
    return {"mode": settings.set_mode(call.actor, subject, call.body().get("mode"), force=call.flag("force"))}


def delete_mode(call: Call, subject: str) -> object:
    return {"mode": settings.delete_mode(call.actor, subject)}


def check_compatibility(call: Call, subject: str, version: str | None = None) -> object:
    """Against one version (by the subject's level's direction), or, without a version, against the
    versions the level checks at registration."""
    _reader(call)
    candidate = check_candidate(call.tenant, call.body())
    level = queries.effective_settings(call.tenant, subject).compatibility
    chosen = parse_version(version) if version is not None else None
    if chosen is not None:
        # A missing subject or version is 40401 / 40402, whatever the level.
        queries.get_version(call.tenant, subject, chosen)
    reasons = register.incompatibilities(call.tenant, subject, candidate, level, chosen)
    document: dict[str, Any] = {"is_compatible": not reasons}
    if call.flag("verbose"):
        document["messages"] = reasons
    return document


root_view = endpoint({"GET": root})
subjects_view = endpoint({"GET": list_subjects})
subject_view = endpoint({"POST": lookup, "DELETE": delete_subject})
versions_view = endpoint({"GET": list_versions, "POST": register_version})
version_view = endpoint({"GET": get_version, "DELETE": delete_version})
version_schema_view = endpoint({"GET": get_version_schema})
referenced_by_view = endpoint({"GET": referenced_by})
schema_types_view = endpoint({"GET": schema_types_list})
contexts_view = endpoint({"GET": contexts})
schema_view = endpoint({"GET": get_schema})
schema_text_view = endpoint({"GET": get_schema_text})
schema_versions_view = endpoint({"GET": schema_versions})
schema_subjects_view = endpoint({"GET": schema_subjects})
config_view = endpoint({"GET": get_config, "PUT": put_config, "DELETE": delete_config})
mode_view = endpoint({"GET": get_mode, "PUT": put_mode})
subject_mode_view = endpoint({"GET": get_mode, "PUT": put_mode, "DELETE": delete_mode})
compatibility_view = endpoint({"POST": check_compatibility})
