"""The request budget alone: room, waiting, refusals (threads with bounded waits, no sleeps)."""

from __future__ import annotations

import threading

import pytest

from broker_nodes.server.request_budget import RequestBudget, RequestBudgetExhaustedError
from tests.broker_nodes.replication.cluster import wait_until


def start(target) -> threading.Thread:  # type: ignore[no-untyped-def]
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_requests_that_fit_take_their_size_and_give_it_back() -> None:
    budget = RequestBudget(100, max_wait_seconds=0.0, max_waiters=1)
    with budget.reserve(60):
        assert budget.state().in_use == 60
        with budget.reserve(40):
            assert budget.state().in_use == 100
    assert budget.state().in_use == 0


def test_a_request_without_room_is_refused_after_the_wait_with_a_retriable_error() -> None:
    budget = RequestBudget(100, max_wait_seconds=0.05, max_waiters=1)
    with budget.reserve(80), pytest.raises(RequestBudgetExhaustedError) as refused:
        budget.acquire(30)
    assert refused.value.retriable
    assert "queued.max.request.bytes" in str(refused.value) and "30" in str(refused.value)
    assert budget.state().refused == 1 and budget.state().in_use == 0


def test_a_waiting_request_goes_once_room_comes_free() -> None:
    budget = RequestBudget(100, max_wait_seconds=10.0, max_waiters=1)
    taken = budget.acquire(80)
    outcome: list[int] = []
    waiter = start(lambda: outcome.append(budget.acquire(50)))
    wait_until(lambda: budget.state().waiting == 1, what="the request to wait")
    budget.release(taken)
    waiter.join(10)
    assert outcome == [50] and budget.state().in_use == 50


def test_a_small_request_passes_a_large_one_waiting_for_room() -> None:
    budget = RequestBudget(100, max_wait_seconds=10.0, max_waiters=2)
    taken = budget.acquire(70)
    large: list[int] = []
    waiter = start(lambda: large.append(budget.acquire(60)))
    wait_until(lambda: budget.state().waiting == 1, what="the large request to wait")
    assert budget.acquire(20) == 20  # fits beside the 70 at once, although the large one came first
    budget.release(taken)
    waiter.join(10)
    assert large == [60] and budget.state().in_use == 80


def test_beyond_the_waiter_limit_a_request_is_refused_at_once() -> None:
    budget = RequestBudget(100, max_wait_seconds=10.0, max_waiters=1)
    taken = budget.acquire(100)
    waiter = start(lambda: budget.release(budget.acquire(10)))
    wait_until(lambda: budget.state().waiting == 1, what="the first request to wait")
    with pytest.raises(RequestBudgetExhaustedError, match="1 requests wait for room already"):
        budget.acquire(10)
    budget.release(taken)
    waiter.join(10)
    assert budget.state().in_use == 0


def test_a_request_larger_than_the_whole_budget_waits_for_all_of_it() -> None:
    budget = RequestBudget(100, max_wait_seconds=10.0, max_waiters=1)
    small = budget.acquire(1)
    huge: list[int] = []
    waiter = start(lambda: huge.append(budget.acquire(500)))
    wait_until(lambda: budget.state().waiting == 1, what="the huge request to wait")
    budget.release(small)
    waiter.join(10)
    assert huge == [100] and budget.state().in_use == 100


def test_reserve_gives_the_bytes_back_when_the_handler_fails() -> None:
    budget = RequestBudget(100, max_wait_seconds=0.0, max_waiters=0)
    with pytest.raises(RuntimeError), budget.reserve(100):
        raise RuntimeError("handler failed")
    assert budget.state().in_use == 0
