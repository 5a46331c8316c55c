"""The module path confluent-kafka's applications also import the client from
(``confluent_kafka.schema_registry.schema_registry_client``): the same names as the package's."""

from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.error import SchemaRegistryError
from weir.schema_registry.schema import ConfigCompatibilityLevel, RegisteredSchema, Schema, SchemaReference, SchemaVersion

__all__ = ["ConfigCompatibilityLevel", "RegisteredSchema", "Schema", "SchemaReference", "SchemaRegistryClient", "SchemaRegistryError", "SchemaVersion"]
