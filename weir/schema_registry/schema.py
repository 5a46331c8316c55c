"""The registry's documents as confluent-kafka names them: ``Schema`` (not yet registered),
``SchemaReference``, ``RegisteredSchema`` (with subject, version and id) and the compatibility levels.

Each has ``to_dict()`` (the REST body) and ``from_dict()`` (from a REST answer). ``Schema`` is
frozen and hashable on its text and type, so the client caches ids by (subject, schema).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConfigCompatibilityLevel", "RegisteredSchema", "Schema", "SchemaReference", "SchemaVersion"]


class ConfigCompatibilityLevel(enum.StrEnum):
    """The seven compatibility levels of a subject (or of the registry)."""

    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    NONE = "NONE"


@dataclass(frozen=True)
class SchemaReference:
    """A schema this one imports: its ``name`` in the schema, found at ``subject`` ``version``."""

    name: str | None
    subject: str | None
    version: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> SchemaReference:
        return cls(document.get("name"), document.get("subject"), document.get("version"))


@dataclass(frozen=True)
class Schema:
    """A schema's text, its type (AVRO, JSON or PROTOBUF) and the schemas it references."""

    schema_str: str | None
    schema_type: str | None = "AVRO"
    references: list[SchemaReference] = field(default_factory=list, hash=False)

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"schema": self.schema_str}
        # The registry's default type is AVRO; Confluent's client leaves it out then.
        if self.schema_type and self.schema_type != "AVRO":
            document["schemaType"] = self.schema_type
        if self.references:
            document["references"] = [reference.to_dict() for reference in self.references]
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Schema:
        references = [SchemaReference.from_dict(reference) for reference in document.get("references") or []]
        return cls(document.get("schema"), document.get("schemaType") or "AVRO", references)


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered under a subject: its version there and its id in the registry."""

    subject: str | None
    version: int | None
    schema_id: int | None
    guid: str | None
    schema: Schema

    def to_dict(self) -> dict[str, Any]:
        document = self.schema.to_dict()
        document.update({"subject": self.subject, "version": self.version, "id": self.schema_id})
        if self.guid is not None:
            document["guid"] = self.guid
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> RegisteredSchema:
        return cls(document.get("subject"), document.get("version"), document.get("id"), document.get("guid"), Schema.from_dict(document))


@dataclass(frozen=True)
class SchemaVersion:
    """One (subject, version) that holds a schema id (``schemas/ids/{id}/versions``)."""

    subject: str | None
    version: int | None

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> SchemaVersion:
        return cls(document.get("subject"), document.get("version"))
