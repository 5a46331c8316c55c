import pytest

from broker_nodes.metering.windows import Window, WindowSchedule, aligned_start

INTERVAL = 60_000
BASE = 1_700_000_040_000  # a multiple of the interval


def test_aligned_start_is_the_boundary_at_or_before():
    assert aligned_start(BASE, INTERVAL) == BASE
    assert aligned_start(BASE + 59_999, INTERVAL) == BASE
    assert aligned_start(BASE + 60_000, INTERVAL) == BASE + 60_000


def test_the_first_window_starts_at_the_boundary_before_the_process_started():
    schedule = WindowSchedule(INTERVAL, BASE + 12_345)
    assert schedule.open_since_ms == BASE
    assert schedule.next_boundary_ms() == BASE + INTERVAL


def test_nothing_closes_before_the_boundary_and_the_window_closes_at_it():
    schedule = WindowSchedule(INTERVAL, BASE + 5)
    assert schedule.close_due(BASE + INTERVAL - 1) is None
    assert schedule.close_due(BASE + INTERVAL) == Window(BASE, BASE + INTERVAL)
    assert schedule.close_due(BASE + INTERVAL + 1) is None
    assert schedule.close_due(BASE + 2 * INTERVAL + 7) == Window(BASE + INTERVAL, BASE + 2 * INTERVAL)


def test_a_window_closed_late_covers_every_interval_passed_and_ends_on_a_boundary():
    schedule = WindowSchedule(INTERVAL, BASE)
    assert schedule.close_due(BASE + 3 * INTERVAL + 500) == Window(BASE, BASE + 3 * INTERVAL)
    assert schedule.next_boundary_ms() == BASE + 4 * INTERVAL


def test_an_early_close_ends_now_and_the_next_window_starts_there():
    schedule = WindowSchedule(INTERVAL, BASE)
    assert schedule.close_early(BASE + 20_000) == Window(BASE, BASE + 20_000)
    assert schedule.next_boundary_ms() == BASE + INTERVAL
    assert schedule.close_due(BASE + INTERVAL) == Window(BASE + 20_000, BASE + INTERVAL)


def test_an_early_close_with_a_clock_that_went_back_gives_an_empty_window():
    schedule = WindowSchedule(INTERVAL, BASE + 30_000)
    schedule.close_early(BASE + 40_000)
    assert schedule.close_early(BASE + 35_000) == Window(BASE + 40_000, BASE + 40_000)


def test_the_interval_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        WindowSchedule(0, BASE)
