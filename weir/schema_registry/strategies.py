"""Subject name strategies: which subject a record's schema is registered under.

``topic_subject_name_strategy`` (the default): ``<topic>-key`` or ``<topic>-value``;
``topic_record_subject_name_strategy``: ``<topic>-<record name>``; ``record_subject_name_strategy``:
``<record name>`` (an Avro record's full name, a JSON Schema's ``title``, a Protobuf message's full
name); ``reference_subject_name_strategy``: a referenced schema's own name (Protobuf imports).
"""

from __future__ import annotations

from collections.abc import Callable

from weir.schema_registry.schema import SchemaReference
from weir.serialization import SerializationContext

__all__ = [
    "SubjectNameStrategy",
    "record_subject_name_strategy",
    "reference_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]

SubjectNameStrategy = Callable[[SerializationContext | None, str | None], str | None]


def topic_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    if ctx is None:
        raise ValueError(
            "SerializationContext is required for topic_subject_name_strategy. Either provide a SerializationContext or use record_subject_name_strategy."
        )
    return f"{ctx.topic}-{ctx.field}"


def topic_record_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    if ctx is None:
        raise ValueError(
            "SerializationContext is required for topic_record_subject_name_strategy. Either provide a SerializationContext or use record_subject_name_strategy."
        )
    return f"{ctx.topic}-{record_name}" if record_name is not None else None


def record_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    return record_name


def reference_subject_name_strategy(ctx: SerializationContext | None, schema_ref: SchemaReference | None) -> str | None:
    return schema_ref.name if schema_ref is not None else None
