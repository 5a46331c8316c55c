"""The broker's SCRAM-SHA-256/512 server exchange (RFC 5802, RFC 7677) and the Authenticator's SCRAM credentials.

The control plane's derivation (``webapp.accounts.scram``) makes the credentials; kafka-python's
SCRAM client, an implementation independent of Weir's, plays the client where no RFC vector is given.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from kafka.sasl.scram import ScramClient

from broker_nodes.clock import ManualClock
from broker_nodes.cluster_state import InvalidSnapshotError
from broker_nodes.security.authenticator import AuthenticationError, Authenticator
from broker_nodes.security.scram import CredentialLookup, ScramCredential, ScramError, ScramExchange, decode_saslname
from broker_nodes.security.snapshot import SecuritySnapshot, SecurityStore
from grpc_protos.weir.v1 import admin_pb2
from tests.broker_nodes.security.managed_cluster import credential as plain_credential
from webapp.accounts.scram import SCRAM_ITERATIONS, derive_scram_credential

# RFC 7677 section 3's example exchange (SCRAM-SHA-256, user "user", password "pencil").
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

KEY = "WCKSCRAMKEY00001"
OLD_KEY = "WCKPLAINONLY0001"
SECRET = "weir_cluster_s3cret-for-scram"
TENANT = "tn-scramtest1"


def broker_credential(mechanism: str, password: str, salt: bytes) -> ScramCredential:
    derived = derive_scram_credential(mechanism, password, salt)
    return ScramCredential(derived.mechanism, derived.salt, derived.iterations, derived.stored_key, derived.server_key)


def lookup_of(*credentials: tuple[str, ScramCredential]) -> CredentialLookup:
    table = {(name, item.mechanism): item for name, item in credentials}

    def lookup(username: str, mechanism: str) -> ScramCredential:
        if (username, mechanism) not in table:
            raise AuthenticationError("invalid API key or secret (unknown, revoked, or not a cluster key)")
        return table[username, mechanism]

    return lookup


def rfc_lookup() -> CredentialLookup:
    return lookup_of(("user", broker_credential("SCRAM-SHA-256", "pencil", RFC_SALT)))


def rfc_exchange() -> ScramExchange:
    return ScramExchange("SCRAM-SHA-256", rfc_lookup(), server_nonce=lambda: RFC_SERVER_NONCE)


def test_the_rfc_7677_sha_256_exchange_is_answered_byte_for_byte() -> None:
    exchange = rfc_exchange()
    assert exchange.first(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not exchange.complete
    assert exchange.final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert exchange.complete and exchange.username == "user"
    assert exchange.credential.iterations == SCRAM_ITERATIONS == 4096


def sha_512_client(password: str) -> ScramClient:
    client = ScramClient(KEY, password, "SCRAM-SHA-512")
    client.nonce = b"fyko+d2lbbFgONRv9qkxdawL"  # fixed, as the salt, so the exchange is the same every run
    return client


def test_a_sha_512_exchange_with_a_fixed_salt_verifies_an_independent_clients_proof_and_signs() -> None:
    salt = bytes(range(32))
    stored = broker_credential("SCRAM-SHA-512", SECRET, salt)
    exchange = ScramExchange("SCRAM-SHA-512", lookup_of((KEY, stored)), server_nonce=lambda: "3rfcNHYJY1ZVvWVs7j")
    client = sha_512_client(SECRET)
    server_first = exchange.respond(client.first_message())
    assert server_first == b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=" + base64.b64encode(salt) + b",i=4096"
    client.process_server_first_message(server_first)
    assert client.stored_key == stored.stored_key and client.server_key == stored.server_key  # both sides derive alike
    server_final = exchange.respond(client.final_message())
    client.process_server_final_message(server_final)  # raises when the server's signature is wrong
    assert exchange.complete and len(base64.b64decode(server_final[2:])) == 64


def test_a_wrong_password_fails_the_proof_and_says_so_without_values() -> None:
    exchange = ScramExchange("SCRAM-SHA-512", lookup_of((KEY, broker_credential("SCRAM-SHA-512", SECRET, b"salt" * 8))))
    client = sha_512_client("not-the-secret")
    client.process_server_first_message(exchange.first(client.first_message()))
    final = client.final_message()
    with pytest.raises(ScramError, match="the proof does not match") as raised:
        exchange.final(final)
    assert final.split(b"p=")[1].decode() not in str(raised.value)
    assert not exchange.complete
    with pytest.raises(ScramError, match="out of order"):
        exchange.final(final)  # one try per exchange


def test_a_client_final_with_another_nonce_is_refused() -> None:
    exchange = rfc_exchange()
    exchange.first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="nonce is not the one this exchange made"):
        exchange.final(RFC_CLIENT_FINAL.replace(b"k0,p=", b"k1,p="))


def test_a_client_final_replayed_into_a_new_exchange_is_refused() -> None:
    replayed = ScramExchange("SCRAM-SHA-256", rfc_lookup())  # a fresh random server nonce, as on a new connection
    replayed.first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="nonce is not the one"):
        replayed.final(RFC_CLIENT_FINAL)


def test_a_replayed_client_first_and_a_final_before_any_first_are_refused() -> None:
    exchange = rfc_exchange()
    with pytest.raises(ScramError, match="out of order"):
        exchange.final(RFC_CLIENT_FINAL)
    exchange = rfc_exchange()
    exchange.respond(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="second client-first"):
        exchange.respond(RFC_CLIENT_FIRST)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (b"n,,n=user,r=abc,tokenauth=true", r"does not support \(tokenauth\)"),
        (b"n,,m=ext,n=user,r=abc", "mandatory extension"),
        (b"p=tls-unique,,n=user,r=abc", "channel binding is not supported"),
        (b"n,a=someone,n=user,r=abc", "authorization id other than the username"),
        (b"n,,r=abc,n=user", "must have n=<username> then r=<nonce>"),
        (b"n,,n=us=2Xer,r=abc", "not =2C or =3D"),
        (b"n,,n=user,r=a\x7fc", "printable ASCII"),
        (b"garbage", "GS2 header"),
        (b"n,,\xff", "not UTF-8"),
        (b"n,,n=user,nonsense", "attribute=value"),
    ],
)
def test_a_client_first_it_does_not_accept_is_refused_with_the_reason(message: bytes, problem: str) -> None:
    with pytest.raises(ScramError, match=problem):
        rfc_exchange().first(message)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "must end with p=<proof>"),
        (b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA", "does not repeat"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,x=1,p=AAAA", r"does not support \(x\)"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=!!", "not valid base64"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA", "must be 32 bytes"),
    ],
)
def test_a_garbled_client_final_is_refused_with_the_reason(message: bytes, problem: str) -> None:
    exchange = rfc_exchange()
    exchange.first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match=problem):
        exchange.final(message)


def test_saslnames_unescape_comma_and_equals() -> None:
    assert decode_saslname("a=2Cb=3Dc") == "a,b=c"
    exchange = ScramExchange("SCRAM-SHA-256", lookup_of(("us,er", broker_credential("SCRAM-SHA-256", "pencil", RFC_SALT))))
    exchange.first(b"n,,n=us=2Cer,r=abc")
    assert exchange.username == "us,er"


# ------------------------------------------------------------------ the Authenticator's SCRAM credentials


def scram_entry(mechanism: str, salt: bytes = b"s" * 32, iterations: int = SCRAM_ITERATIONS) -> admin_pb2.ScramCredential:
    derived = derive_scram_credential(mechanism, SECRET, salt, iterations)
    return admin_pb2.ScramCredential(mechanism=mechanism, salt=salt, iterations=iterations, stored_key=derived.stored_key, server_key=derived.server_key)


def snapshot_request(*scram: admin_pb2.ScramCredential) -> admin_pb2.ApplySecurityRequest:
    with_scram = plain_credential(KEY, SECRET, TENANT, "User:sa-scram")
    with_scram.scram.extend(scram)
    return admin_pb2.ApplySecurityRequest(version=1, credentials=[with_scram, plain_credential(OLD_KEY, SECRET, TENANT, "User:sa-old")])


@pytest.fixture
def authenticator(tmp_path: Path) -> Authenticator:
    store = SecurityStore(tmp_path)
    store.store(SecuritySnapshot.from_request(snapshot_request(scram_entry("SCRAM-SHA-256"), scram_entry("SCRAM-SHA-512"))))
    return Authenticator(security_required=True, internal_token="t" * 32, security_store=store, clock=ManualClock())


def test_an_unknown_key_is_refused_at_the_client_first_message(authenticator: Authenticator) -> None:
    exchange = ScramExchange("SCRAM-SHA-256", authenticator.scram_credential)
    with pytest.raises(AuthenticationError, match="invalid API key or secret"):
        exchange.first(b"n,,n=WCKNOBODY,r=abc")


def test_a_key_without_scram_credentials_is_told_to_use_a_new_key_or_plain(authenticator: Authenticator) -> None:
    exchange = ScramExchange("SCRAM-SHA-512", authenticator.scram_credential)
    with pytest.raises(AuthenticationError, match="has no SCRAM-SHA-512 credentials.*create a new cluster API key, or use sasl.mechanism=PLAIN"):
        exchange.first(f"n,,n={OLD_KEY},r=abc".encode())


def test_a_completed_exchange_resolves_the_keys_caller_until_the_key_is_revoked(authenticator: Authenticator, tmp_path: Path) -> None:
    exchange = ScramExchange("SCRAM-SHA-256", authenticator.scram_credential)
    client = ScramClient(KEY, SECRET, "SCRAM-SHA-256")
    client.process_server_first_message(exchange.first(client.first_message()))
    client.process_server_final_message(exchange.final(client.final_message()))
    stored_key = exchange.credential.stored_key
    call = authenticator.authenticate_scram_key(KEY, "SCRAM-SHA-256", stored_key, "127.0.0.1")
    assert (call.tenant_id, call.principal) == (TENANT, "User:sa-scram")
    with pytest.raises(AuthenticationError):
        authenticator.authenticate_scram_key(KEY, "SCRAM-SHA-256", b"x" * 32, "127.0.0.1")
    store = SecurityStore(tmp_path)
    store.store(SecuritySnapshot.from_request(admin_pb2.ApplySecurityRequest(version=2)))
    revoked = Authenticator(security_required=True, internal_token="t" * 32, security_store=store)
    with pytest.raises(AuthenticationError, match="invalid API key"):
        revoked.authenticate_scram_key(KEY, "SCRAM-SHA-256", stored_key, "127.0.0.1")


def test_scram_credentials_survive_the_security_state_file_and_old_files_still_load(tmp_path: Path) -> None:
    store = SecurityStore(tmp_path)
    applied = SecuritySnapshot.from_request(snapshot_request(scram_entry("SCRAM-SHA-512")))
    store.store(applied)
    loaded = SecurityStore(tmp_path).load()
    assert loaded is not None
    assert loaded.credentials[KEY].scram == applied.credentials[KEY].scram
    assert not loaded.credentials[OLD_KEY].scram
    document = json.loads(store.path.read_text())
    assert all("scram" not in item for item in document["snapshot"]["credentials"] if item["api_key"] == OLD_KEY)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (admin_pb2.ScramCredential(mechanism="SCRAM-SHA-1", salt=b"s", iterations=4096, stored_key=b"k" * 20, server_key=b"k" * 20), "unknown SCRAM mechanism"),
        (scram_entry("SCRAM-SHA-256", iterations=1000), "iterations must be 4096"),
        (admin_pb2.ScramCredential(mechanism="SCRAM-SHA-256", salt=b"s", iterations=4096, stored_key=b"k" * 31, server_key=b"k" * 32), "32-byte"),
    ],
)
def test_a_snapshot_with_an_unusable_scram_credential_is_refused(entry: admin_pb2.ScramCredential, problem: str) -> None:
    with pytest.raises(InvalidSnapshotError, match=problem):
        SecuritySnapshot.from_request(snapshot_request(entry))


def test_a_snapshot_with_a_mechanism_twice_is_refused() -> None:
    with pytest.raises(InvalidSnapshotError, match="more than once"):
        SecuritySnapshot.from_request(snapshot_request(scram_entry("SCRAM-SHA-256"), scram_entry("SCRAM-SHA-256")))
