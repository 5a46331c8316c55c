"""Generated from confluent/type/decimal.proto (Confluent's, Apache-2.0): see :mod:`weir.schema_registry.protos`."""
