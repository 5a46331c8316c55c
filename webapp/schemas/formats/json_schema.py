"""JSON Schema schemas of the registry: ``parse`` (:mod:`.json_schema_parse`) and ``incompatibilities`` (:mod:`.json_schema_compat`).

``parse`` checks the text against its draft's metaschema (draft-04 to 2020-12, draft-07 by default) and
resolves every ``$ref`` against the referenced schemas and the document's own definitions;
``incompatibilities`` applies Confluent Schema Registry's JSON Schema compatibility rules.
"""

from __future__ import annotations

from webapp.schemas.formats.json_schema_compat import COMPATIBLE, Difference, all_differences, differences
from webapp.schemas.formats.json_schema_parse import JsonSchema, parse

__all__ = ["COMPATIBLE", "Difference", "JsonSchema", "all_differences", "differences", "incompatibilities", "parse"]


def incompatibilities(reader: JsonSchema, writer: JsonSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (empty when it can), by Confluent's rules."""
    return [str(difference) for difference in differences(reader, writer)]
