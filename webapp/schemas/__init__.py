"""Per-tenant schema registry: Confluent Schema Registry's REST API over the control-plane database."""
