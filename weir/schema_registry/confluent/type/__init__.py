"""``decimal_pb2``: ``confluent/type/decimal.proto`` (``confluent.type.Decimal``); see the parent package."""
