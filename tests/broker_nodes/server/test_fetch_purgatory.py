import threading

from broker_nodes.server import fetch_purgatory
from broker_nodes.server.fetch_purgatory import FetchPurgatory

KEY = ("orders", 0)


def test_append_of_enough_bytes_wakes_the_waiter():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([KEY], bytes_needed=100)
    purgatory.notify_append("orders", 0, 60)
    assert not waiter.wait(0)
    purgatory.notify_append("orders", 0, 40)
    assert waiter.wait(0)


def test_append_to_another_partition_does_not_wake():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([KEY], bytes_needed=1)
    purgatory.notify_append("orders", 1, 1000)
    purgatory.notify_append("payments", 0, 1000)
    assert not waiter.wait(0)


def test_waiter_on_several_partitions_counts_bytes_of_all():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([("a", 0), ("b", 0)], bytes_needed=10)
    purgatory.notify_append("a", 0, 5)
    purgatory.notify_append("b", 0, 5)
    assert waiter.wait(0)


def test_rearm_clears_the_wake_up_and_the_count():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([KEY], bytes_needed=1)
    purgatory.notify_append("orders", 0, 5)
    waiter.rearm(10)
    assert not waiter.wait(0)
    purgatory.notify_append("orders", 0, 10)
    assert waiter.wait(0)


def test_release_unregisters_and_frees_the_slot():
    purgatory = FetchPurgatory(max_parked=1)
    waiter = purgatory.park([KEY], bytes_needed=1)
    assert purgatory.park([KEY], bytes_needed=1) is None
    purgatory.release(waiter)
    assert purgatory.parked == 0
    purgatory.notify_append("orders", 0, 5)  # nobody waits: must not fail
    assert purgatory.park([KEY], bytes_needed=1) is not None


def test_close_wakes_everyone_and_refuses_new_waiters():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([KEY], bytes_needed=10**9)
    purgatory.close()
    assert waiter.wait(0)
    assert purgatory.closed
    assert purgatory.park([KEY], bytes_needed=1) is None


def test_wake_partition_wakes_its_waiters_whatever_they_need():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([KEY], bytes_needed=10**9)
    purgatory.wake_partition("orders", 0)
    assert waiter.wait(0)


def test_waiting_thread_is_woken_by_an_append_from_another_thread():
    purgatory = FetchPurgatory(max_parked=4)
    waiter = purgatory.park([KEY], bytes_needed=1)
    woken = []
    thread = threading.Thread(target=lambda: woken.append(waiter.wait(10)))
    thread.start()
    purgatory.notify_append("orders", 0, 1)
    thread.join(10)
    assert woken == [True]


class CountedSignal(fetch_purgatory.WakeSignal):
    made = 0

    def __init__(self) -> None:
        super().__init__()
        CountedSignal.made += 1


def test_a_long_poll_makes_no_wake_signal_until_it_parks_or_is_asked_for_one(monkeypatch):
    monkeypatch.setattr(fetch_purgatory, "WakeSignal", CountedSignal)
    CountedSignal.made = 0
    purgatory = FetchPurgatory(max_parked=4)
    answered = purgatory.start_long_poll([KEY], lambda: ("records", 10, False), min_bytes=1, max_wait_ms=500, monotonic=lambda: 0.0, holds_thread=True)
    assert answered.advance()  # enough bytes at the first read: no wait, no signal
    answered.release()
    assert CountedSignal.made == 0
    parked = purgatory.start_long_poll([KEY], lambda: ("nothing", 0, False), min_bytes=1, max_wait_ms=500, monotonic=lambda: 0.0, holds_thread=True)
    idle = parked.signal  # an owner may ask before the first advance: a signal nobody sets
    assert not idle.is_set()
    assert not parked.advance()  # parked: its waiter's signal is the one appends set
    purgatory.notify_append("orders", 0, 5)
    assert parked.signal.is_set() and not idle.is_set()
    parked.release()
    assert CountedSignal.made == 2
