"""A new cluster key gets SCRAM-SHA-256 and SCRAM-SHA-512 credentials, and the security snapshot carries them.

The derivation is RFC 5802's, checked against RFC 7677's example; what is stored verifies a
client's proof but is not the salted password (which would let anyone holding the database
forge one).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from webapp.accounts.actions.keys import check_create_key, do_create_key
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, ApiKeyKind, Role, ScramCredential
from webapp.accounts.scram import SCRAM_ITERATIONS, derive_scram_credential
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.snapshots import build_snapshots

pytestmark = pytest.mark.django_db


def test_the_derivation_gives_rfc_7677s_stored_key_and_server_key() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    derived = derive_scram_credential("SCRAM-SHA-256", "pencil", salt)
    # The RFC's exchange: the client proof it prints must hash to StoredKey, and its server signature come from ServerKey.
    auth_message = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_key = bytes(a ^ b for a, b in zip(proof, hmac.digest(derived.stored_key, auth_message, "sha256"), strict=True))
    assert hashlib.sha256(client_key).digest() == derived.stored_key
    assert base64.b64encode(hmac.digest(derived.server_key, auth_message, "sha256")) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert "stored" not in repr(derived) and derived.stored_key.hex() not in repr(derived)


def test_an_unknown_mechanism_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown SCRAM mechanism 'SCRAM-SHA-1'"):
        derive_scram_credential("SCRAM-SHA-1", "pencil", b"salt")


@pytest.fixture
def owner() -> Actor:
    signed_up = do_sign_up("scram-owner", "scram-owner@example.com", "a-long-enough-password-1", "Scram")
    return Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)


def create_key(owner: Actor, kind: str, account_name: str = "app") -> tuple[ApiKey, str]:
    account = do_create_service_account(owner, f"{account_name}-{kind}", "", Role.DEVELOPER)
    created = do_create_key(owner, kind, check_create_key(owner, kind, account.public_id, ""), "")
    return created.key, created.secret


def test_a_new_cluster_key_stores_both_mechanisms_credentials_and_never_the_salted_password(owner: Actor) -> None:
    key, secret = create_key(owner, ApiKeyKind.CLUSTER)
    stored = {row.mechanism: row for row in ScramCredential.objects.filter(api_key=key)}
    assert sorted(stored) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    for mechanism, hash_name in (("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")):
        row = stored[mechanism]
        salt = base64.b64decode(row.salt)
        assert row.iterations == SCRAM_ITERATIONS and len(salt) == 32
        expected = derive_scram_credential(mechanism, secret, salt)
        assert base64.b64decode(row.stored_key) == expected.stored_key
        assert base64.b64decode(row.server_key) == expected.server_key
        salted_password = base64.b64encode(hashlib.pbkdf2_hmac(hash_name, secret.encode(), salt, SCRAM_ITERATIONS)).decode()
        assert salted_password not in (row.salt, row.stored_key, row.server_key)
    assert stored["SCRAM-SHA-256"].salt != stored["SCRAM-SHA-512"].salt  # a salt of its own per mechanism


def test_a_cloud_key_gets_no_scram_credentials(owner: Actor) -> None:
    key, _ = create_key(owner, ApiKeyKind.CLOUD)
    assert not ScramCredential.objects.filter(api_key=key).exists()


def test_the_security_snapshot_carries_the_scram_credentials_and_none_for_an_older_key(owner: Actor) -> None:
    key, _ = create_key(owner, ApiKeyKind.CLUSTER)
    older, _ = create_key(owner, ApiKeyKind.CLUSTER, "older")
    ScramCredential.objects.filter(api_key=older).delete()  # as a key created before SCRAM support
    security = build_snapshots([SnapshotKind.SECURITY]).security
    assert security is not None
    pushed = {credential.api_key: credential for credential in security.credentials}
    assert [scram.mechanism for scram in pushed[key.key_id].scram] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    row = ScramCredential.objects.get(api_key=key, mechanism="SCRAM-SHA-512")
    sent = pushed[key.key_id].scram[1]
    assert (sent.salt, sent.iterations, sent.stored_key, sent.server_key) == (
        base64.b64decode(row.salt),
        row.iterations,
        base64.b64decode(row.stored_key),
        base64.b64decode(row.server_key),
    )
    assert list(pushed[older.key_id].scram) == []
