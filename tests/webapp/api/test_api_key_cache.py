"""A cloud key verified lately is answered from the web process's memory (issue 19 goal 6), and a
key revoked or disabled stops working at once in this process and within the TTL elsewhere."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.webapp.api.conftest import TenantFixture, basic_client
from webapp.accounts import key_cache
from webapp.accounts.key_cache import VerifiedKeyCache
from webapp.accounts.models import ApiKey, Role

TTL_SECONDS = 2.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """This process's cache, on a clock the test moves."""
    fake = FakeClock()
    monkeypatch.setattr(key_cache, "_cache", VerifiedKeyCache(TTL_SECONDS, clock=fake))
    return fake


def queries_of(client, path: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as captured:
        status = client.get(path).status_code
    return status, len(captured.captured_queries)


def test_a_verified_key_is_not_looked_up_again_within_the_ttl(acme: TenantFixture, clock: FakeClock) -> None:
    client = acme.client(Role.DEVELOPER)
    first_status, first = queries_of(client, "/api/v1/jobs")
    again_status, again = queries_of(client, "/api/v1/jobs")
    clock.now += TTL_SECONDS
    expired_status, expired = queries_of(client, "/api/v1/jobs")

    assert (first_status, again_status, expired_status) == (200, 200, 200)
    assert again == first - 2  # neither the key's lookup nor its last_used_at write
    assert expired == again + 1  # looked up again once the entry expired (last_used_at is recent)


def test_a_wrong_secret_is_refused_while_the_right_one_is_cached(acme: TenantFixture, clock: FakeClock) -> None:
    key_id, secret = acme.secrets[Role.DEVELOPER]
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200
    assert basic_client(key_id, secret + "x").get("/api/v1/tenant").status_code == 401
    assert basic_client(key_id, secret[:-1]).get("/api/v1/tenant").status_code == 401


def test_a_key_revoked_in_this_process_stops_at_the_next_request(acme: TenantFixture, clock: FakeClock) -> None:
    key_id, secret = acme.secrets[Role.DEVELOPER]
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200

    assert acme.client(Role.OWNER).delete(f"/api/v1/api-keys/{key_id}").status_code == 200

    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 401


def test_a_key_revoked_by_another_process_stops_within_the_ttl(acme: TenantFixture, clock: FakeClock) -> None:
    key_id, secret = acme.secrets[Role.DEVELOPER]
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200
    # Another web process revokes it: no signal reaches this one.
    ApiKey.objects.filter(key_id=key_id).update(revoked_at="2026-01-01T00:00:00Z")

    clock.now += TTL_SECONDS - 0.1
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200  # within the stated bound
    clock.now += 0.1
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 401


def test_a_deactivated_user_is_refused_within_the_ttl_and_at_once_when_saved_here(acme: TenantFixture, clock: FakeClock) -> None:
    key_id, secret = acme.secrets[Role.DEVELOPER]
    user = acme.members[Role.DEVELOPER].user
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200

    user.is_active = False
    user.save(update_fields=["is_active"])

    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 401
    get_user_model().objects.filter(pk=user.pk).update(is_active=True)
    assert basic_client(key_id, secret).get("/api/v1/tenant").status_code == 200


def test_each_hit_hands_out_its_own_copy(acme: TenantFixture, clock: FakeClock) -> None:
    key_id, secret = acme.secrets[Role.DEVELOPER]
    cache = key_cache.verified_keys()
    cache.put(key_id, secret, ApiKey.objects.select_related("tenant", "owner_service_account", "owner_membership__user").get(key_id=key_id))

    first = cache.get(key_id, secret)
    assert first is not None
    first.tenant.name = "changed by a view"
    second = cache.get(key_id, secret)

    assert second is not None and second.tenant.name == acme.tenant.name


def test_the_cache_is_bounded_and_drops_the_entry_that_expires_first() -> None:
    clock = FakeClock()
    cache = VerifiedKeyCache(TTL_SECONDS, max_entries=2, clock=clock)
    keys = [ApiKey(key_id=f"K{index}") for index in range(3)]
    for index, key in enumerate(keys):
        cache.put(key.key_id, "secret", key)
        clock.now += 0.1 * (index + 1)

    assert len(cache) == 2
    assert cache.get("K0", "secret") is None
    assert [cache.get(key_id, "secret").key_id for key_id in ("K1", "K2")] == ["K1", "K2"]  # type: ignore[union-attr]


def test_a_ttl_of_zero_turns_the_cache_off() -> None:
    cache = VerifiedKeyCache(0)
    cache.put("K0", "secret", ApiKey(key_id="K0"))
    assert (cache.get("K0", "secret"), len(cache)) == (None, 0)
