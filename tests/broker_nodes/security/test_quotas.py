"""Token buckets per tenant and direction, with an injected clock."""

from __future__ import annotations

from broker_nodes.clock import ManualClock
from broker_nodes.security.quotas import Direction, QuotaManager

RATE = 1000  # bytes per second


def test_within_quota_is_not_throttled() -> None:
    quotas = QuotaManager(ManualClock())
    assert quotas.record("tn-a", Direction.PRODUCE, RATE, RATE) == 0


def test_over_quota_throttle_is_the_time_to_pay_back_the_excess() -> None:
    quotas = QuotaManager(ManualClock())
    quotas.record("tn-a", Direction.PRODUCE, RATE, RATE)  # the one-second burst is spent
    assert quotas.record("tn-a", Direction.PRODUCE, RATE // 2, RATE) == 501


def test_other_tenant_is_unaffected_by_a_throttled_tenant() -> None:
    quotas = QuotaManager(ManualClock())
    for _ in range(5):
        quotas.record("tn-a", Direction.PRODUCE, RATE, RATE)
    assert quotas.record("tn-a", Direction.PRODUCE, 1, RATE) > 0
    assert quotas.record("tn-b", Direction.PRODUCE, RATE, RATE) == 0


def test_produce_and_fetch_have_separate_buckets() -> None:
    quotas = QuotaManager(ManualClock())
    quotas.record("tn-a", Direction.PRODUCE, 3 * RATE, RATE)
    assert quotas.record("tn-a", Direction.FETCH, RATE, RATE) == 0


def test_bucket_refills_with_time() -> None:
    clock = ManualClock()
    quotas = QuotaManager(clock)
    quotas.record("tn-a", Direction.FETCH, 2 * RATE, RATE)
    clock.advance(2000)
    assert quotas.record("tn-a", Direction.FETCH, RATE // 2, RATE) == 0


def test_throttle_is_bounded() -> None:
    quotas = QuotaManager(ManualClock(), max_throttle_ms=5000)
    assert quotas.record("tn-a", Direction.PRODUCE, 100 * RATE, RATE) == 5000


def test_zero_rate_means_unlimited() -> None:
    quotas = QuotaManager(ManualClock())
    assert quotas.record("tn-a", Direction.PRODUCE, 10**9, 0) == 0
