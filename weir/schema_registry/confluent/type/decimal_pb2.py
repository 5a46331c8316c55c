"""``confluent/type/decimal.proto``'s ``Decimal``: confluent-kafka's module when it is importable,
else Weir's generated one (see :mod:`weir.schema_registry.confluent` for why)."""

try:
    from confluent_kafka.schema_registry.confluent.type.decimal_pb2 import *  # noqa: F403 - the generated module's names, whichever it is
except ImportError:
    from weir.schema_registry.protos.confluent.type.decimal_pb2 import *  # noqa: F403
