"""The steps of a waiting request (``partition_waitlist.Pending``) that both front doors drive.

A long poll and an acks=all wait are driven here step by step, the way the Kafka listener drives
them without a thread: a subscribed callback stands for the event loop's wake-up, a manual clock
for its timer.
"""

from __future__ import annotations

from broker_nodes.clock import ManualClock
from broker_nodes.partition_waitlist import WakeSignal, wait_blocking
from broker_nodes.replication.purgatory import AcksPurgatory, AcksTarget
from broker_nodes.server.fetch_purgatory import FetchPurgatory, LongPoll

KEY = ("orders", 0)


class Log:
    """A stand-in partition: ``read`` returns what was appended so far."""

    def __init__(self) -> None:
        self.data = b""

    def read(self) -> tuple[bytes, int, bool]:
        return self.data, len(self.data), False


def long_poll(purgatory: FetchPurgatory, log: Log, clock: ManualClock, *, max_wait_ms: int = 1000, holds_thread: bool = False) -> LongPoll[bytes]:
    return purgatory.start_long_poll([KEY], log.read, min_bytes=1, max_wait_ms=max_wait_ms, monotonic=clock.monotonic, holds_thread=holds_thread)


def test_a_parked_long_poll_calls_its_subscriber_when_data_arrives_and_then_answers_it() -> None:
    purgatory, log, clock = FetchPurgatory(max_parked=1, max_parked_without_thread=4), Log(), ManualClock()
    poll = long_poll(purgatory, log, clock)
    assert not poll.advance()  # nothing yet: parked
    assert purgatory.parked == 1
    woken: list[bool] = []
    poll.signal.subscribe(lambda: woken.append(True))
    log.data = b"batch"
    purgatory.notify_append(*KEY, len(log.data))
    assert woken  # the wake-up reached the subscriber (the listener's future)
    assert poll.advance() and poll.results == b"batch"
    poll.release()
    poll.release()  # idempotent: a connection may release after a failed step too
    assert purgatory.parked == 0


def test_a_long_poll_not_woken_by_its_deadline_answers_with_its_last_read() -> None:
    purgatory, log, clock = FetchPurgatory(max_parked=1, max_parked_without_thread=4), Log(), ManualClock()
    poll = long_poll(purgatory, log, clock, max_wait_ms=500)
    assert not poll.advance()
    assert poll.remaining_seconds() == 0.5
    clock.advance(500)  # the loop timer fired
    assert poll.advance() and poll.results == b""
    poll.release()
    assert purgatory.parked == 0


def test_closing_the_purgatory_wakes_a_subscribed_long_poll() -> None:
    purgatory, log, clock = FetchPurgatory(max_parked=1, max_parked_without_thread=4), Log(), ManualClock()
    poll = long_poll(purgatory, log, clock)
    assert not poll.advance()
    woken: list[bool] = []
    poll.signal.subscribe(lambda: woken.append(True))
    purgatory.close()
    assert woken and poll.advance()
    poll.release()


def test_a_subscriber_that_comes_after_the_wake_up_is_called_at_once() -> None:
    signal = WakeSignal()
    signal.set()
    woken: list[bool] = []
    signal.subscribe(lambda: woken.append(True))
    assert woken == [True]


def test_long_polls_without_a_thread_have_their_own_cap() -> None:
    purgatory, log, clock = FetchPurgatory(max_parked=1, max_parked_without_thread=2), Log(), ManualClock()
    parked = [long_poll(purgatory, log, clock) for _ in range(2)]
    assert not any(poll.advance() for poll in parked)
    full = long_poll(purgatory, log, clock)
    assert full.advance() and full.results == b""  # no slot: answered at once with what it has
    blocking = long_poll(purgatory, log, clock, holds_thread=True)
    assert not blocking.advance()  # the thread-holding cap is apart
    assert purgatory.parked == 3
    for poll in [*parked, full, blocking]:
        poll.release()
    assert purgatory.parked == 0


def test_an_acks_wait_answers_each_partition_when_replicated_or_at_its_deadline() -> None:
    purgatory, clock = AcksPurgatory(), ManualClock()
    high_watermarks = {0: 0, 1: 0}

    def target(partition: int) -> AcksTarget:
        return AcksTarget(("orders", partition), 5, lambda: high_watermarks[partition] >= 5, lambda: TimeoutError(f"partition {partition}"))

    wait = purgatory.wait([target(0), target(1)], clock.monotonic() + 1.0, clock.monotonic)
    assert not wait.advance()
    assert purgatory.parked == 2
    woken: list[bool] = []
    wait.signal.subscribe(lambda: woken.append(True))
    high_watermarks[0] = 5
    purgatory.on_high_watermark("orders", 0, 5)
    assert woken and not wait.advance()  # partition 1 still waits
    clock.advance(1000)
    assert wait.advance()
    assert wait.errors[0] is None and isinstance(wait.errors[1], TimeoutError)
    wait.release()
    assert purgatory.parked == 0


def test_the_blocking_flavour_runs_the_same_steps_on_its_thread() -> None:
    purgatory, log, clock = FetchPurgatory(max_parked=1), Log(), ManualClock()
    log.data = b"ready"
    poll = long_poll(purgatory, log, clock, holds_thread=True)
    wait_blocking(poll)
    assert poll.results == b"ready" and purgatory.parked == 0
