"""Confluent's own Protobuf types at the path confluent-kafka ships them: ``meta_pb2``
(``confluent/meta.proto``: the ``confluent.Meta`` file/message/field/enum options) and
``type.decimal_pb2`` (``confluent/type/decimal.proto``: ``confluent.type.Decimal``, also at its former
path ``types.decimal_pb2``).

Applications' generated ``*_pb2`` modules import ``<sdk>.schema_registry.confluent.meta_pb2`` when
their .proto imports "confluent/meta.proto" (confluent-kafka's examples' user.proto does), so these
modules must exist here for such code to port by its import.

A process holds one file per name in Protobuf's default descriptor pool, and refuses a second,
different ``confluent/meta.proto`` (confluent-kafka's newer releases extend it). So when
confluent-kafka is importable its modules are used (one registration whichever package is imported
first); otherwise Weir's own, generated from the same files as confluent-kafka 2.16's (byte for byte the
same descriptors; :mod:`weir.schema_registry.protos`).
The Protobuf serializer treats these imports as well-known and never registers them as references.
"""
