"""Schema formats of the registry: one module per schema type (``avro``, ``json_schema``, ``protobuf``).

Each module offers the same two functions, so that the registry treats every type alike:

- ``parse(schema: str, references: Mapping[str, str]) -> ParsedSchema``: parse and validate the text of
  a schema with the texts of the schemas it references (by the name it imports them under); raises
  :class:`~webapp.schemas.formats.errors.InvalidSchema` naming what is wrong.
- ``incompatibilities(reader: ParsedSchema, writer: ParsedSchema) -> list[str]``: why data written with
  ``writer`` cannot be read with ``reader`` (empty when it can), each reason naming the place in the
  schema and the rule it breaks.

A ``ParsedSchema`` has ``canonical: str``, the normalised text two equal schemas share (what the
registry compares to find an existing id).
"""
