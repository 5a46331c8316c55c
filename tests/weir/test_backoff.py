"""weir.backoff: the one exponential backoff the SDK, the provisioning jobs and make up's supervisor share."""

from weir.backoff import exponential_backoff


def test_the_delay_doubles_per_attempt_from_the_first_and_stops_at_the_cap() -> None:
    assert [exponential_backoff(0.1, attempt, 1.0) for attempt in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_a_negative_attempt_waits_the_first_delay_and_a_huge_one_the_cap() -> None:
    assert exponential_backoff(4.0, -3, 300.0) == 4.0
    assert exponential_backoff(4.0, 10**9, 300.0) == 300.0  # no float built from 2**(10**9)
