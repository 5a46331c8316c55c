"""``confluent/meta.proto``'s messages and extensions: confluent-kafka's module when it is importable,
else Weir's generated one (see :mod:`weir.schema_registry.confluent` for why)."""

try:
    from confluent_kafka.schema_registry.confluent.meta_pb2 import *  # noqa: F403 - the generated module's names, whichever it is
except ImportError:
    from weir.schema_registry.protos.confluent.meta_pb2 import *  # noqa: F403
