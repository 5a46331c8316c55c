"""confluent-kafka's ``confluent_kafka.schema_registry`` over Weir's Schema Registry.

``from weir.schema_registry import SchemaRegistryClient, Schema`` and
``from weir.schema_registry.avro import AvroSerializer`` (``.json_schema``, ``.protobuf``): code
written for confluent-kafka's registry client and serializers ports by changing its imports. The
registry is the control plane's ``http://<web>/schema-registry`` with a tenant's cloud API key as
``basic.auth.user.info``. Avro needs ``pip install 'weir[avro]'``, JSON Schema ``'weir[json]'``;
Protobuf needs nothing more.
"""

from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.error import SchemaRegistryError
from weir.schema_registry.schema import ConfigCompatibilityLevel, RegisteredSchema, Schema, SchemaReference, SchemaVersion
from weir.schema_registry.strategies import (
    record_subject_name_strategy,
    reference_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from weir.serialization import MessageField, SerializationContext, SerializationError

__all__ = [
    "ConfigCompatibilityLevel",
    "MessageField",
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SchemaVersion",
    "SerializationContext",
    "SerializationError",
    "record_subject_name_strategy",
    "reference_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]
