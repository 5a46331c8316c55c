"""The OpenAPI schema and the interactive docs are served, and the schema documents the
error answers (with the error body) that every operation can give. Schemathesis with every
check over every operation is ``test_schema_conformance``."""

from __future__ import annotations


def test_schema_and_docs_are_served(client) -> None:  # type: ignore[no-untyped-def]
    openapi = client.get("/api/schema/?format=json")
    docs = client.get("/api/docs/")

    assert openapi.status_code == 200
    assert "/api/v1/topics/{topic_name}/configs:alter" in openapi.json()["paths"]
    assert docs.status_code == 200


def test_every_operation_documents_its_error_answers_with_the_error_body(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/?format=json").json()
    error_body = {"$ref": "#/components/schemas/Error"}

    topic = schema["paths"]["/api/v1/topics/{topic_name}"]["delete"]["responses"]
    listing = schema["paths"]["/api/v1/topics"]["get"]
    creation = schema["paths"]["/api/v1/topics"]["post"]["responses"]
    groups = schema["paths"]["/api/v1/consumer-groups"]["get"]["responses"]

    assert {"401", "403", "404", "409"} <= set(topic)
    assert {"400", "401", "403", "404"} <= set(listing["responses"])  # 404: a cursor that leads nowhere
    assert {"400", "401", "403", "409", "415"} <= set(creation)
    assert groups["503"]["content"]["application/json"]["schema"] == error_body
    assert creation["400"]["content"]["application/json"]["schema"] == error_body
    page_size = next(parameter for parameter in listing["parameters"] if parameter["name"] == "page_size")
    assert (page_size["schema"]["minimum"], page_size["schema"]["maximum"]) == (1, 500)
    assert groups["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/KafkaConsumerGroupList"}
    brokers = schema["paths"]["/api/v1/brokers"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert brokers == {"$ref": "#/components/schemas/KafkaBrokerList"}
