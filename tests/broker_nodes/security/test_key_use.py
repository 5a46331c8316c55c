"""Which applications use each cluster key: bounded, cleaned, recorded by gRPC and the Kafka listener."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.kafka_protocol.sasl import SaslSession
from broker_nodes.security.authenticator import Authenticator, secret_digest
from broker_nodes.security.key_use import MAX_FIELD_CHARS, KeyUse, application, grpc_application
from broker_nodes.security.snapshot import Credential, SecuritySnapshot, SecurityStore

SECRET = "s3cret"
SDK_AGENT = "weir-python/orders service grpc-python/1.66.0 grpc-c/43.0.0 (linux; chttp2)"


@pytest.fixture
def authenticator(tmp_path: Path) -> Authenticator:
    store = SecurityStore(tmp_path)
    store.store(SecuritySnapshot(1, {"KEYA": Credential("KEYA", secret_digest(SECRET), "tn-a", "User:sa-1")}))
    return Authenticator(security_required=True, internal_token="internal-token-0123456789", security_store=store, clock=ManualClock())


def test_the_sdk_user_agent_gives_its_client_id_even_with_spaces() -> None:
    app = grpc_application(SDK_AGENT, "10.0.0.7")
    assert (app.client_id, app.software_name, app.address) == ("orders service", "weir-python", "10.0.0.7")
    other = grpc_application("grpc-go/1.60.1", "10.0.0.8")
    assert (other.client_id, other.software_name, other.software_version) == ("", "grpc-go", "1.60.1")
    assert grpc_application(None, "10.0.0.9").software_name == ""


def test_client_supplied_values_are_bounded_and_printable() -> None:
    app = application("x" * 10_000, "bad\x00name\n", "1.0", "::1")
    assert len(app.client_id) == MAX_FIELD_CHARS
    assert app.software_name == "bad?name?"
    assert len(grpc_application("weir-python/" + "y" * 100_000, "::1").client_id) == MAX_FIELD_CHARS


def test_each_key_keeps_its_most_recently_seen_distinct_applications() -> None:
    use = KeyUse(max_applications=3)
    for number in range(10):  # a client.id per connection costs no more than the bound
        use.seen("KEYA", application(f"app-{number}", "", "", "10.0.0.1"), 1000 + number)
    use.seen("KEYA", application("app-7", "", "", "10.0.0.1"), 5000)
    apps = use.applications("KEYA")
    assert [(app.client_id, first, last) for app, first, last in apps] == [("app-8", 1008, 1008), ("app-9", 1009, 1009), ("app-7", 1007, 5000)]
    assert use.applications("KEYB") == []


def test_a_grpc_call_records_its_application_once_the_address_is_known(authenticator: Authenticator) -> None:
    metadata = (("x-weir-api-key", "KEYA"), ("x-weir-api-secret", SECRET), ("user-agent", SDK_AGENT))
    call = authenticator.authenticate(metadata, "")  # the interceptor: no peer, no application yet
    assert call.api_key == "KEYA" and authenticator.key_use.applications("KEYA") == []
    authenticator.note_grpc_application(call, metadata, "10.1.2.3")
    assert [app.client_id for app, _, _ in authenticator.key_use.applications("KEYA")] == ["orders service"]
    authenticator.authenticate(metadata, "ipv4:10.1.2.4:5555")  # served without the interceptor: recorded at once
    assert [app.address for app, _, _ in authenticator.key_use.applications("KEYA")] == ["10.1.2.3", "10.1.2.4"]
    assert set(authenticator.last_used()) == {"KEYA"}


def test_a_kafka_connection_records_client_id_and_kip_511_software(authenticator: Authenticator) -> None:
    session = SaslSession(authenticator, "192.0.2.5")
    session.handshake("PLAIN", 1)
    assert session.authenticate(b"\x00KEYA\x00" + SECRET.encode()).error_code == 0
    assert authenticator.key_use.applications("KEYA") == []  # the SASL step itself carries no application
    session.note_software("apache-kafka-java", "3.7.0")
    session.call_context("billing")
    session.call_context("billing")
    ((app, _, _),) = authenticator.key_use.applications("KEYA")
    assert (app.client_id, app.software_name, app.software_version, app.address) == ("billing", "apache-kafka-java", "3.7.0", "192.0.2.5")
