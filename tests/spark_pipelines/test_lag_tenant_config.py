"""The lag job's per-tenant client configuration: a tenant token minted from the internal token, never the internal token itself."""

from __future__ import annotations

import pytest

from spark_pipelines.lag_brokers import tenant_config
from weir import tenant_tokens

INTERNAL_TOKEN = "pipeline-internal-token-0123456789"
NOW_MS = 1_700_000_000_000


def test_the_internal_token_is_swapped_for_a_tenant_token_of_that_tenant() -> None:
    config = tenant_config({"bootstrap.servers": "b:1", "weir.internal.token": INTERNAL_TOKEN, "ssl.ca.location": "/ca.pem"}, "tn-a", 2.0, now_ms=NOW_MS)
    assert "weir.internal.token" not in config and INTERNAL_TOKEN not in repr(config)
    assert (config["bootstrap.servers"], config["ssl.ca.location"], config["request.timeout.ms"]) == ("b:1", "/ca.pem", 2000)
    grant = tenant_tokens.verify(tenant_tokens.derive_key(INTERNAL_TOKEN), config["weir.tenant.token"], now_ms=NOW_MS)
    assert (grant.tenant_id, grant.expires_ms) == ("tn-a", NOW_MS + tenant_tokens.DEFAULT_LIFETIME_MS)


def test_a_long_timeout_gets_a_token_that_outlives_it_within_the_longest_lifetime() -> None:
    config = tenant_config({"bootstrap.servers": "b:1", "weir.internal.token": INTERNAL_TOKEN}, "tn-a", 600.0, now_ms=NOW_MS)
    grant = tenant_tokens.verify(tenant_tokens.derive_key(INTERNAL_TOKEN), config["weir.tenant.token"], now_ms=NOW_MS)
    assert grant.expires_ms == NOW_MS + 1_200_000
    capped = tenant_config({"bootstrap.servers": "b:1", "weir.internal.token": INTERNAL_TOKEN}, "tn-a", 7200.0, now_ms=NOW_MS)
    assert (
        tenant_tokens.verify(tenant_tokens.derive_key(INTERNAL_TOKEN), capped["weir.tenant.token"], now_ms=NOW_MS).expires_ms
        == NOW_MS + tenant_tokens.MAX_LIFETIME_MS
    )


def test_without_an_internal_token_or_a_tenant_nothing_is_minted() -> None:
    with pytest.raises(ValueError, match="has none"):
        tenant_config({"bootstrap.servers": "b:1"}, "tn-a", 2.0)
    with pytest.raises(ValueError, match="must not be empty"):
        tenant_config({"bootstrap.servers": "b:1", "weir.internal.token": INTERNAL_TOKEN}, "", 2.0)
