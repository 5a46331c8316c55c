"""The tenant-token codec: what it accepts, what it refuses, and that it never echoes a token."""

from __future__ import annotations

import pytest

from weir import tenant_tokens
from weir.tenant_tokens import DATA_PLANE_PURPOSE, MAX_LIFETIME_MS, TenantTokenError, derive_key, key_from_hex, mint, verify

KEY = derive_key("internal-token-of-cluster-one")
OTHER_KEY = derive_key("internal-token-of-cluster-two")
NOW_MS = 1_700_000_000_000
TENANT = "tn-abc123"


def test_a_minted_token_verifies_to_its_tenant_purpose_and_expiry() -> None:
    token = mint(KEY, TENANT, now_ms=NOW_MS, lifetime_ms=300_000)
    assert verify(KEY, token, now_ms=NOW_MS) == tenant_tokens.TenantGrant(TENANT, DATA_PLANE_PURPOSE, NOW_MS + 300_000)


def test_the_key_is_derived_from_the_internal_token_and_differs_per_token() -> None:
    assert derive_key("internal-token-of-cluster-one") == KEY
    assert KEY != OTHER_KEY and len(KEY) == 32
    assert key_from_hex(KEY.hex()) == KEY
    with pytest.raises(ValueError, match="empty"):
        derive_key("")


@pytest.mark.parametrize("text", ["zz" * 32, "abcd", ""])
def test_a_key_that_is_not_64_hex_digits_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="tenant-token key must be"):
        key_from_hex(text)


def test_every_tampered_byte_is_refused() -> None:
    token = mint(KEY, TENANT, now_ms=NOW_MS)
    for position in range(len(token)):
        replacement = "A" if token[position] != "A" else "B"
        tampered = token[:position] + replacement + token[position + 1 :]
        with pytest.raises(TenantTokenError) as raised:
            verify(KEY, tampered, now_ms=NOW_MS)
        assert tampered not in str(raised.value) and token not in str(raised.value)


def test_the_spare_bits_of_the_signatures_last_character_cannot_be_changed() -> None:
    token = mint(KEY, TENANT, now_ms=NOW_MS)
    last = token[-1]
    # Base64 of 32 bytes: the last character carries 4 bits and 2 spare ones; every spelling
    # that decodes to the same bytes must be refused all the same.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    siblings = [char for char in alphabet if char != last and alphabet.index(char) >> 2 == alphabet.index(last) >> 2]
    assert siblings
    for sibling in siblings:
        with pytest.raises(TenantTokenError, match="signature does not match"):
            verify(KEY, token[:-1] + sibling, now_ms=NOW_MS)


def test_a_token_signed_with_another_key_is_refused() -> None:
    with pytest.raises(TenantTokenError, match="signature does not match"):
        verify(KEY, mint(OTHER_KEY, TENANT, now_ms=NOW_MS), now_ms=NOW_MS)


def test_a_token_is_valid_until_the_millisecond_before_its_expiry() -> None:
    token = mint(KEY, TENANT, now_ms=NOW_MS, lifetime_ms=1000)
    assert verify(KEY, token, now_ms=NOW_MS + 999).tenant_id == TENANT
    with pytest.raises(TenantTokenError, match="expired 0 ms ago"):
        verify(KEY, token, now_ms=NOW_MS + 1000)
    with pytest.raises(TenantTokenError, match="expired 5000 ms ago"):
        verify(KEY, token, now_ms=NOW_MS + 6000)


def test_a_token_expiring_beyond_the_longest_lifetime_is_refused() -> None:
    token = mint(KEY, TENANT, now_ms=NOW_MS, lifetime_ms=MAX_LIFETIME_MS)
    assert verify(KEY, token, now_ms=NOW_MS).expires_ms == NOW_MS + MAX_LIFETIME_MS
    with pytest.raises(TenantTokenError, match="expires more than 60000 ms from now"):
        verify(KEY, token, now_ms=NOW_MS, max_lifetime_ms=60_000)
    # Minted "in the future" (a clock far ahead): still bounded by the verifier's clock.
    with pytest.raises(TenantTokenError, match="expires more than"):
        verify(KEY, mint(KEY, TENANT, now_ms=NOW_MS + 10 * MAX_LIFETIME_MS), now_ms=NOW_MS)


@pytest.mark.parametrize("lifetime_ms", [0, -1, MAX_LIFETIME_MS + 1])
def test_minting_refuses_a_lifetime_outside_the_bounds(lifetime_ms: int) -> None:
    with pytest.raises(ValueError, match="at most"):
        mint(KEY, TENANT, now_ms=NOW_MS, lifetime_ms=lifetime_ms)


def test_a_token_for_another_purpose_is_refused() -> None:
    token = mint(KEY, TENANT, now_ms=NOW_MS, purpose="schema-registry")
    with pytest.raises(TenantTokenError, match="is for 'schema-registry', not 'data-plane'"):
        verify(KEY, token, now_ms=NOW_MS)
    assert verify(KEY, token, now_ms=NOW_MS, purpose="schema-registry").purpose == "schema-registry"


@pytest.mark.parametrize("tenant_id", ["tn-a.b.c", "tn~other", "tenant with spaces", "tén-ünïcödé-租户", "a=b/c+d", "..", "x" * 300])
def test_a_tenant_id_with_odd_characters_round_trips_without_splitting_the_token(tenant_id: str) -> None:
    token = mint(KEY, tenant_id, now_ms=NOW_MS)
    assert token.count(".") == 4
    assert verify(KEY, token, now_ms=NOW_MS).tenant_id == tenant_id


def test_an_empty_tenant_cannot_be_minted() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        mint(KEY, "", now_ms=NOW_MS)


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("", "empty"),
        ("v1.dG4.1.data-plane", "expected 5 fields"),
        ("v1.dG4.1.data-plane.sig.extra", "expected 5 fields"),
        ("v2.dG4.1700000300000.data-plane.c2ln", "unknown version"),
        ("v1.dG4.-5.data-plane.c2ln", "expiry must be milliseconds"),
        ("v1.dG4.1e9.data-plane.c2ln", "expiry must be milliseconds"),
        ("v1.dG4=.1700000300000.data-plane.c2ln", "must be base64url"),
        ("v1.dG4.1700000300000.Data Plane.c2ln", "purpose must be"),
        ("v1." + "A" * 3000 + ".1.data-plane.c2ln", "longer than"),
    ],
)
def test_a_malformed_token_is_refused_naming_the_problem_not_the_token(token: str, problem: str) -> None:
    with pytest.raises(TenantTokenError, match=problem) as raised:
        verify(KEY, token, now_ms=NOW_MS)
    assert raised.value.retriable is False
    if token:
        assert token not in str(raised.value)
