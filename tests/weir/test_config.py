"""Client configuration: the table's keys, aliases, defaults and errors."""

from __future__ import annotations

import pytest

from weir.config import CONFIG_PROPERTIES, CONSUMER, PRODUCER, ClientConfig
from weir.errors import KafkaError, KafkaException

BASE = {"bootstrap.servers": "127.0.0.1:9092"}


def invalid(config: dict, role: str = PRODUCER) -> KafkaException:
    with pytest.raises(KafkaException) as raised:
        ClientConfig({**BASE, **config}, role)
    assert raised.value.error.code() == KafkaError._INVALID_ARG
    return raised.value


def test_unknown_key_names_the_key() -> None:
    error = invalid({"lingerr.ms": 5})
    assert 'No such configuration property: "lingerr.ms"' in error.error.str()


def test_non_numeric_integer_names_the_key() -> None:
    assert '"batch.size"' in invalid({"batch.size": "big"}).error.str()


def test_integer_out_of_range_is_refused() -> None:
    assert "outside allowed range" in invalid({"linger.ms": -1}).error.str()


def test_boolean_is_not_an_integer() -> None:
    invalid({"retries": True})


def test_bad_enum_value_lists_the_choices() -> None:
    message = invalid({"compression.type": "brotli"}).error.str()
    assert "brotli" in message and "lz4" in message


def test_defaults_follow_librdkafka() -> None:
    config = ClientConfig(BASE, PRODUCER)
    assert config["linger.ms"] == 5
    assert config["batch.size"] == 1_000_000
    assert config["enable.idempotence"] is False
    assert config["acks"] == -1
    assert config["max.in.flight.requests.per.connection"] == 5
    assert config["buffer.memory"] == 32 * 1024 * 1024
    assert config["partitioner"] == "consistent_random"


def test_aliases_set_the_canonical_key() -> None:
    config = ClientConfig({**BASE, "queue.buffering.max.ms": 20, "compression.codec": "LZ4", "message.timeout.ms": 1000}, PRODUCER)
    assert config["linger.ms"] == 20
    assert config["compression.type"] == "lz4"
    assert config["delivery.timeout.ms"] == 1000


@pytest.mark.parametrize(("given", "expected"), [("all", -1), ("ALL", -1), (-1, -1), ("1", 1), (0, 0)])
def test_acks_accepts_kafka_spellings(given: object, expected: int) -> None:
    config = ClientConfig({**BASE, "acks": given, "enable.idempotence": False}, PRODUCER)
    assert config["acks"] == expected


def test_idempotence_with_acks_one_is_refused() -> None:
    assert "enable.idempotence" in invalid({"acks": 1, "enable.idempotence": True}).error.str()


def test_acks_one_works_with_idempotence_off_by_default() -> None:
    assert ClientConfig({**BASE, "acks": 1}, PRODUCER)["acks"] == 1


def test_idempotence_allows_at_most_five_in_flight() -> None:
    invalid({"max.in.flight.requests.per.connection": 6, "enable.idempotence": True})


def test_string_booleans_are_accepted() -> None:
    assert ClientConfig({**BASE, "enable.auto.commit": "false"}, CONSUMER)["enable.auto.commit"] is False


@pytest.mark.parametrize(
    ("given", "expected"), [("smallest", "earliest"), ("beginning", "earliest"), ("largest", "latest"), ("end", "latest"), ("error", "error")]
)
def test_auto_offset_reset_spellings(given: str, expected: str) -> None:
    assert ClientConfig({**BASE, "auto.offset.reset": given}, CONSUMER)["auto.offset.reset"] == expected


def test_missing_bootstrap_servers_is_refused() -> None:
    with pytest.raises(KafkaException, match="bootstrap.servers"):
        ClientConfig({}, PRODUCER)


def test_bootstrap_addresses_default_the_port() -> None:
    config = ClientConfig({"bootstrap.servers": "a:1, b ,PLAINTEXT://c:3"}, PRODUCER)
    assert config.bootstrap_addresses() == ["a:1", "b:9092", "c:3"]


def test_credentials_become_call_metadata() -> None:
    config = ClientConfig(
        {**BASE, "sasl.username": "key", "sasl.password": "secret", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}, PRODUCER
    )
    assert config.call_metadata() == (("x-weir-api-key", "key"), ("x-weir-api-secret", "secret"))


def test_a_tenant_token_travels_as_its_own_header_and_weir_tenant_is_refused_as_removed() -> None:
    config = ClientConfig({**BASE, "weir.tenant.token": "v1.token"}, PRODUCER)
    assert config.call_metadata() == (("x-weir-tenant-token", "v1.token"),)
    with pytest.raises(KafkaException, match=r'"weir.tenant" was removed: .*weir.tenant.token') as raised:
        ClientConfig({**BASE, "weir.internal.token": "secret-token", "weir.tenant": "tn-a"}, PRODUCER)
    assert "secret-token" not in str(raised.value)


def test_tls_protocols_are_accepted_and_unknown_ones_refused() -> None:
    config = ClientConfig({**BASE, "security.protocol": "SASL_SSL", "ssl.ca.location": "/etc/ssl/ca.pem"}, PRODUCER)
    assert config["security.protocol"].lower() == "sasl_ssl"
    invalid({"security.protocol": "CARRIER_PIGEON"})


def test_callbacks_must_be_callable() -> None:
    invalid({"on_delivery": "print"})


def test_consumer_keys_are_accepted_by_a_producer() -> None:
    assert ClientConfig({**BASE, "group.id": "g"}, PRODUCER)["group.id"] == "g"


def test_every_property_documents_itself() -> None:
    for prop in CONFIG_PROPERTIES.values():
        assert prop.doc and prop.roles, prop.name


def test_none_is_as_if_not_given_where_librdkafka_resets_the_key() -> None:
    """confluent-kafka passes None to librdkafka, which resets a string, callback or logger key
    to its default; a key that needs a number, boolean or choice refuses None, naming the key."""
    given = ClientConfig({**BASE, "client.id": None, "sasl.username": None, "group.id": None, "error_cb": None, "logger": None}, CONSUMER)
    default = ClientConfig(BASE, CONSUMER)
    for name in ("client.id", "sasl.username", "group.id", "error_cb", "logger"):
        assert given[name] == default[name]
        assert not given.is_set(name)
    assert given.call_metadata() == default.call_metadata()  # no credential header with a None value
    with pytest.raises(KafkaException, match='"bootstrap.servers" must be set'):
        ClientConfig({"bootstrap.servers": None}, PRODUCER)  # ignored, then Weir's rule: the SDK connects at once
    for name in ("linger.ms", "acks", "enable.idempotence", "compression.type"):
        assert f'"{name}"' in invalid({name: None}).error.str()
