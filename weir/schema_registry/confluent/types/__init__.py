"""``decimal_pb2``: ``confluent.type.Decimal`` at the path confluent-kafka 2.10 and earlier had it
(``confluent/types/decimal.proto``; since moved to ``confluent/type/decimal.proto``)."""
