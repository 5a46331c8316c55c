"""Input serializers (what a request may carry) and output serializers (resource shapes,
Confluent REST v3 style where one exists) are separate classes."""
