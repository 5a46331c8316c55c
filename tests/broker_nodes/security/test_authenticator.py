"""The Authenticator's rules for tenant tokens and the internal token, with an injected clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.security.access import CallerKind
from broker_nodes.security.authenticator import AuthenticationError, Authenticator
from broker_nodes.security.snapshot import SecurityStore
from weir.tenant_tokens import TENANT_TOKEN_HEADER, derive_key, mint

INTERNAL_TOKEN = "unit-internal-token-0123456789"
KEY = derive_key(INTERNAL_TOKEN)
PEER = "ipv4:127.0.0.1:50000"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def authenticator(tmp_path: Path, clock: ManualClock) -> Authenticator:
    return Authenticator(security_required=True, internal_token=INTERNAL_TOKEN, security_store=SecurityStore(tmp_path), clock=clock)


def refused(authenticator: Authenticator, metadata: tuple[tuple[str, str], ...], problem: str) -> str:
    with pytest.raises(AuthenticationError, match=problem) as raised:
        authenticator.authenticate(metadata, PEER)
    message = str(raised.value)
    for _, value in metadata:
        assert value not in message, "an authentication error echoed a credential"
    return message


def test_a_tenant_token_gives_the_tenants_full_rights_context(authenticator: Authenticator, clock: ManualClock) -> None:
    call = authenticator.authenticate(((TENANT_TOKEN_HEADER, mint(KEY, "tn-a", now_ms=clock.milliseconds())),), PEER)
    assert (call.tenant_id, call.kind, call.client_host) == ("tn-a", CallerKind.INTERNAL, "127.0.0.1")
    assert call.owns("tn-a~orders") and not call.owns("tn-b~orders") and not call.owns("__consumer_offsets")


def test_a_tenant_token_is_refused_once_the_brokers_clock_passes_its_expiry(authenticator: Authenticator, clock: ManualClock) -> None:
    token = mint(KEY, "tn-a", now_ms=clock.milliseconds(), lifetime_ms=300_000)
    clock.advance(299_999)
    metadata = ((TENANT_TOKEN_HEADER, token),)
    assert authenticator.authenticate(metadata, PEER).tenant_id == "tn-a"
    clock.advance(1)
    refused(authenticator, metadata, "the tenant token expired 0 ms ago")


def test_a_token_signed_with_another_clusters_key_is_refused(authenticator: Authenticator, clock: ManualClock) -> None:
    token = mint(derive_key("another-cluster"), "tn-a", now_ms=clock.milliseconds())
    refused(authenticator, ((TENANT_TOKEN_HEADER, token),), "signature does not match")


def test_a_token_naming_a_qualified_name_is_not_a_tenant(authenticator: Authenticator, clock: ManualClock) -> None:
    refused(authenticator, ((TENANT_TOKEN_HEADER, mint(KEY, "tn-a~orders", now_ms=clock.milliseconds())),), "not a tenant id")


def test_x_weir_tenant_is_refused_with_the_internal_token_and_with_a_tenant_token(authenticator: Authenticator, clock: ManualClock) -> None:
    message = refused(authenticator, (("x-weir-internal-token", INTERNAL_TOKEN), ("x-weir-tenant", "tn-b")), "x-weir-tenant is no longer accepted")
    assert TENANT_TOKEN_HEADER in message
    token = mint(KEY, "tn-a", now_ms=clock.milliseconds())
    refused(authenticator, ((TENANT_TOKEN_HEADER, token), ("x-weir-tenant", "tn-b")), "x-weir-tenant is no longer accepted")
    refused(authenticator, ((TENANT_TOKEN_HEADER, token), ("x-weir-tenant", "tn-a")), "x-weir-tenant is no longer accepted")


def test_two_credentials_in_one_call_are_refused(authenticator: Authenticator, clock: ManualClock) -> None:
    token = mint(KEY, "tn-a", now_ms=clock.milliseconds())
    refused(authenticator, (("x-weir-internal-token", INTERNAL_TOKEN), (TENANT_TOKEN_HEADER, token)), "give one credential per call")
    refused(authenticator, (("x-weir-api-key", "KEY"), ("x-weir-api-secret", "s"), (TENANT_TOKEN_HEADER, token)), "give one credential per call")


def test_the_internal_token_alone_still_sees_every_name(authenticator: Authenticator) -> None:
    call = authenticator.authenticate((("x-weir-internal-token", INTERNAL_TOKEN),), PEER)
    assert (call.tenant_id, call.kind) == ("", CallerKind.INTERNAL)
    assert call.owns("tn-a~orders") and call.owns("__usage")


def test_a_broker_without_an_internal_token_verifies_no_tenant_token(tmp_path: Path, clock: ManualClock) -> None:
    standalone = Authenticator(security_required=False, internal_token="", security_store=SecurityStore(tmp_path), clock=clock)
    refused(standalone, ((TENANT_TOKEN_HEADER, mint(KEY, "tn-a", now_ms=clock.milliseconds())),), "cannot verify tenant tokens")
