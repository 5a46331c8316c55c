from bench.pacing import RatePacer
from bench.payloads import read_stamp, stamped_value, value_pool


class FakeClock:
    def __init__(self) -> None:
        self.now_ns = 1_000_000_000

    def __call__(self) -> int:
        return self.now_ns


def test_due_times_are_spaced_by_the_rate() -> None:
    clock = FakeClock()
    pacer = RatePacer(5000, clock_ns=clock)
    assert pacer.due_ns(0) == clock.now_ns
    assert pacer.due_ns(5000) - pacer.due_ns(0) == 1_000_000_000
    assert pacer.due_ns(1) - pacer.due_ns(0) == 200_000


def test_seconds_until_due_when_early_is_the_remaining_time() -> None:
    clock = FakeClock()
    pacer = RatePacer(1000, clock_ns=clock)
    assert pacer.seconds_until_due(3) == 0.003


def test_seconds_until_due_when_late_is_zero() -> None:
    clock = FakeClock()
    pacer = RatePacer(1000, clock_ns=clock)
    clock.now_ns += 50_000_000
    assert pacer.seconds_until_due(10) == 0.0


def test_stamped_value_keeps_length_and_carries_due_time() -> None:
    filler = value_pool(100)[0]
    value = stamped_value(filler, 123_456_789)
    assert len(value) == 100
    assert read_stamp(value) == 123_456_789
    assert value[8:] == filler[8:]


def test_value_pool_holds_distinct_values_of_the_requested_size() -> None:
    pool = value_pool(1024)
    assert {len(value) for value in pool} == {1024}
    assert len(set(pool)) == len(pool)
