import pytest

from bench.latency_receiver import LatencyReceiver, ReceiverError, ReceiverSpec


def test_receiver_returns_the_latencies_the_child_measured() -> None:
    spec = ReceiverSpec("tests.bench.receivers", "receive_counting", {"latency_ns": 1234})
    with LatencyReceiver(spec, expected=5, seconds_limit=10) as receiver:
        latencies = receiver.latencies(timeout=10)
    assert list(latencies) == [1234] * 5


def test_receiver_failure_in_child_raises_with_its_reason() -> None:
    spec = ReceiverSpec("tests.bench.receivers", "receive_failing")
    with pytest.raises(ReceiverError, match="nothing listens there"), LatencyReceiver(spec, expected=5, seconds_limit=10):
        pass
