"""Protobuf schemas of the registry: ``parse`` (:mod:`.protobuf_parse`) and ``incompatibilities`` (:mod:`.protobuf_compat`).

``parse`` takes ``.proto`` text (proto2 or proto3) or a base64 ``FileDescriptorProto`` (what
confluent-kafka-python's serializer registers) with the texts it imports by name, and compiles it with
protoc; ``incompatibilities`` applies Confluent Schema Registry's Protobuf compatibility rules.
"""

from __future__ import annotations

from webapp.schemas.formats.protobuf_compat import COMPATIBLE, Difference, all_differences, differences
from webapp.schemas.formats.protobuf_parse import ProtobufSchema, parse

__all__ = ["COMPATIBLE", "Difference", "ProtobufSchema", "all_differences", "differences", "incompatibilities", "parse"]


def incompatibilities(reader: ProtobufSchema, writer: ProtobufSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (empty when it can), by Confluent's rules."""
    return [str(difference) for difference in differences(reader, writer)]
