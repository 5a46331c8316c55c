"""``confluent.type.Decimal`` at its former module path: confluent-kafka's module when it is
importable, else Weir's generated ``confluent/type/decimal.proto`` (see :mod:`weir.schema_registry.confluent`)."""

try:
    from confluent_kafka.schema_registry.confluent.types.decimal_pb2 import *  # noqa: F403 - the generated module's names, whichever it is
except ImportError:
    from weir.schema_registry.protos.confluent.type.decimal_pb2 import *  # noqa: F403
