"""A schema from a request made ready for the registry: its text checked, references resolved,
parsed by its format, fingerprinted; and the parsed live versions of a subject it is checked against."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from webapp.accounts.facade import Tenant
from webapp.schemas import schema_types
from webapp.schemas.compatibility import EarlierVersion
from webapp.schemas.errors import BadRequest
from webapp.schemas.limits import check_schema_size
from webapp.schemas.models import SubjectVersion
from webapp.schemas.queries import reference_lookup, references_of, subject_versions
from webapp.schemas.references import Reference, parse_references, resolve


@dataclass(frozen=True)
class Candidate:
    schema_type: str
    text: str
    references: list[Reference]
    parsed: Any
    fingerprint: str


def schema_fields(body: dict[str, Any]) -> tuple[str, str, object]:
    """(text, type, raw references) of a request body naming a schema; BadRequest when malformed."""
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("The request must carry the schema's text as a string in 'schema'.")
    schema_type = body.get("schemaType") or schema_types.AVRO
    if not isinstance(schema_type, str):
        raise BadRequest("'schemaType' must be a string: AVRO, JSON or PROTOBUF.")
    return text, schema_type.upper(), body.get("references")


def check_candidate(tenant: Tenant, body: dict[str, Any]) -> Candidate:
    """Validate and parse the schema a request names; 400 / 42201 naming what is wrong."""
    text, schema_type, raw_references = schema_fields(body)
    check_schema_size(text)
    # An unknown or unavailable type is refused before any reference is looked up.
    schema_types.format_for(schema_type)
    references, texts = resolve(parse_references(raw_references), reference_lookup(tenant))
    parsed = schema_types.parse(schema_type, text, texts)
    return Candidate(schema_type, text, references, parsed, fingerprint(schema_type, parsed.canonical, references))


def fingerprint(schema_type: str, canonical: str, references: list[Reference]) -> str:
    """What makes two registrations of a tenant one schema id: type, canonical text and references."""
    document = json.dumps([schema_type, canonical, [[ref.name, ref.subject, ref.version] for ref in references]], separators=(",", ":"))
    return hashlib.sha256(document.encode()).hexdigest()


def parsed_version(row: SubjectVersion) -> EarlierVersion:
    """A stored version parsed again (with its references) for a compatibility check."""
    _, texts = resolve(references_of(row.schema), reference_lookup(row.tenant))
    return EarlierVersion(version=row.version, parsed=schema_types.parse(row.schema.schema_type, row.schema.text, texts))


def live_versions(tenant: Tenant, subject: str) -> list[SubjectVersion]:
    # References prefetched: a transitive check parses every live version, one query for all their references.
    return list(subject_versions(tenant, subject).select_related("schema", "tenant").prefetch_related("schema__references").order_by("version"))
