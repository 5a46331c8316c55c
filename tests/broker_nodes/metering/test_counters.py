import threading

from broker_nodes.metering.counters import PartitionTraffic, ProduceTally, TrafficCounters, fetched_totals
from broker_nodes.storage.log import AppendInfo
from weir.records import RecordBatchBuilder, assign_offsets


def batch(count: int, value: bytes = b"v" * 10, base_offset: int = 0) -> bytes:
    builder = RecordBatchBuilder()
    for index in range(count):
        builder.append(1_700_000_000_000 + index, None, value)
    data = bytearray(builder.build())
    assign_offsets(data, 0, base_offset, 0)
    return bytes(data)


def appended(size: int, records: int, *, duplicate: bool = False) -> AppendInfo:
    return AppendInfo(0, records - 1, 0, -1, 0, records, size, duplicate)


def test_fetched_totals_read_bytes_and_records_from_the_batch_headers():
    first, second = batch(3), batch(5, base_offset=3)
    assert fetched_totals(first + second) == (len(first) + len(second), 8)


def test_fetched_totals_of_nothing_are_zero():
    assert fetched_totals(b"") == (0, 0)


def test_a_trailing_partial_batch_is_not_counted():
    whole, partial = batch(2), batch(4, base_offset=2)
    assert fetched_totals(whole + partial[:-1]) == (len(whole), 2)
    assert fetched_totals(whole + partial[:20]) == (len(whole), 2)


def test_produce_and_fetch_add_up_per_partition_until_drained():
    counters = TrafficCounters()
    counters.add_produced([("tn-a~orders", 0, 100, 4), ("tn-a~orders", 1, 50, 2)], throttle_time_ms=7)
    counters.add_produced([("tn-a~orders", 0, 10, 1)], throttle_time_ms=0)
    counters.add_fetched([("tn-a~orders", 0, 110, 5)], throttle_time_ms=3)
    drained = counters.drain()
    assert drained == {
        ("tn-a~orders", 0): PartitionTraffic(
            bytes_in=110, records_in=5, bytes_out=110, records_out=5, produce_requests=2, fetch_requests=1, throttle_time_ms=10
        ),
        ("tn-a~orders", 1): PartitionTraffic(bytes_in=50, records_in=2, produce_requests=1, throttle_time_ms=7),
    }
    assert counters.drain() == {}


def test_a_request_without_partitions_adds_nothing():
    counters = TrafficCounters()
    counters.add_fetched([], throttle_time_ms=100)
    assert counters.drain() == {}


def test_a_produce_tally_counts_appends_and_a_retried_duplicate_as_a_request_without_bytes():
    counters = TrafficCounters()
    tally = ProduceTally(counters)
    tally.appended("tn-a~orders", 0, appended(300, 3))
    tally.appended("tn-a~orders", 1, appended(300, 3, duplicate=True))
    assert counters.drain() == {}, "nothing is counted before the request finishes"
    tally.finish(throttle_time_ms=5)
    assert counters.drain() == {
        ("tn-a~orders", 0): PartitionTraffic(bytes_in=300, records_in=3, produce_requests=1, throttle_time_ms=5),
        ("tn-a~orders", 1): PartitionTraffic(produce_requests=1, throttle_time_ms=5),
    }


def test_concurrent_requests_and_drains_lose_and_double_count_nothing():
    counters = TrafficCounters()
    threads_count, requests_per_thread = 4, 2000
    drained: list[dict] = []
    adding_done = threading.Event()

    def add() -> None:
        for _ in range(requests_per_thread):
            counters.add_produced([("t", 0, 10, 1)], throttle_time_ms=0)
            counters.add_fetched([("t", 0, 20, 2)], throttle_time_ms=0)

    def drain_until_done() -> None:
        while not adding_done.is_set():
            drained.append(counters.drain())
        drained.append(counters.drain())

    drainer = threading.Thread(target=drain_until_done)
    drainer.start()
    adders = [threading.Thread(target=add) for _ in range(threads_count)]
    for thread in adders:
        thread.start()
    for thread in adders:
        thread.join(30)
    adding_done.set()
    drainer.join(30)
    totals = [window[("t", 0)] for window in drained if ("t", 0) in window]
    requests = threads_count * requests_per_thread
    assert sum(item.produce_requests for item in totals) == requests
    assert sum(item.bytes_in for item in totals) == 10 * requests
    assert sum(item.records_out for item in totals) == 2 * requests
