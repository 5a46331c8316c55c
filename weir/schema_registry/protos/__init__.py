"""Confluent's own .proto files and their generated modules (``make protos``), compiled relative to
this directory so that they register as ``confluent/meta.proto`` and ``confluent/type/decimal.proto``,
the names confluent-kafka gives them. Applications import them through
:mod:`weir.schema_registry.confluent`, never from here."""
