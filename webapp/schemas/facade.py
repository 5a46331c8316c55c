"""What other apps may use of the schema registry.

- ``schema_subjects(tenant, schema_id)``: the subjects (live versions) a tenant's schema id is
  registered under, empty for an id the tenant does not have: what a broker-side check
  (``confluent.value.schema.validation``) asks of a record's schema id and its topic's subject.
- ``available_types()``: the schema types this registry parses.
- The dashboard's Schemas page: ``subject_summaries``, ``version_summaries``, ``live_versions``, ``get_version``,
  ``pretty_schema``, ``schema_diff``, ``effective_settings``, and the actions ``register``,
  ``delete_version``, ``set_compatibility`` (``RegistryError`` and ``IncompatibleSchema`` with its
  reasons on refusal).
- Confluent's wire format: ``WireDecoder`` (the message browser), ``encode`` (the produce form).
"""

from __future__ import annotations

from webapp.accounts.facade import Tenant
from webapp.schemas.actions.delete import delete_version
from webapp.schemas.actions.register import register
from webapp.schemas.actions.settings import set_compatibility
from webapp.schemas.compatibility import LEVELS
from webapp.schemas.errors import IncompatibleSchema, RegistryError, SchemaNotFound
from webapp.schemas.overview import SubjectSummary, VersionSummary, live_versions, pretty_schema, schema_diff, subject_summaries, version_summaries
from webapp.schemas.queries import effective_settings, get_version, parse_version, schema_versions
from webapp.schemas.references import LATEST
from webapp.schemas.schema_types import available_types
from webapp.schemas.wire_format import Decoded, EncodingError, UnknownSchema, WireDecoder, encode

URL_PREFIX = "schema-registry"


def schema_subjects(tenant: Tenant, schema_id: int) -> list[str]:
    try:
        pairs = schema_versions(tenant, schema_id)
    except SchemaNotFound:
        return []
    return sorted({subject for subject, _ in pairs})


__all__ = [
    "LATEST",
    "LEVELS",
    "URL_PREFIX",
    "Decoded",
    "EncodingError",
    "IncompatibleSchema",
    "RegistryError",
    "SubjectSummary",
    "UnknownSchema",
    "VersionSummary",
    "WireDecoder",
    "available_types",
    "delete_version",
    "effective_settings",
    "encode",
    "get_version",
    "live_versions",
    "parse_version",
    "pretty_schema",
    "register",
    "schema_diff",
    "schema_subjects",
    "set_compatibility",
    "subject_summaries",
    "version_summaries",
]
