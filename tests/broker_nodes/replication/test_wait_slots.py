"""acks=all waits are capped so that they can never take every request thread from the followers' fetches."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.broker_nodes.replication.cluster import ReplicatedCluster, wait_until
from weir.errors import ErrorCode

# One request thread: the pool is 1 + 1 (parked fetch) + 4 (acks=all waiters) threads.
TINY_POOL = {"num.io.threads": "1"}
CONCURRENT_PRODUCES = 12


def test_more_concurrent_acks_all_produces_than_wait_slots_neither_starve_replication_nor_append_the_refused(tmp_path: Path) -> None:
    cluster = ReplicatedCluster(tmp_path, broker_configs=TINY_POOL)
    try:
        cluster.apply(leader=1, epoch=1)
        wait_until(lambda: cluster.isr(1) == (1, 2, 3), what="the full ISR")
        start = cluster.log(1).log_end_offset
        answers: list[int] = []
        lock = threading.Lock()

        def produce(number: int) -> None:
            code = cluster.produce(1, [b"value-%d" % number], timeout_ms=20000).error_code
            with lock:
                answers.append(code)

        threads = [threading.Thread(target=produce, args=(number,)) for number in range(CONCURRENT_PRODUCES)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(answers) == CONCURRENT_PRODUCES
        assert set(answers) <= {ErrorCode.NO_ERROR, ErrorCode.REQUEST_TIMED_OUT}
        succeeded = answers.count(ErrorCode.NO_ERROR)
        assert succeeded >= 4  # at least the wait slots' worth went through
        # Refused requests appended nothing; the accepted ones reached every replica without the ISR shrinking.
        assert cluster.log(1).log_end_offset - start == succeeded
        assert cluster.isr(1) == (1, 2, 3)
        wait_until(lambda: cluster.log(2).log_end_offset == cluster.log(3).log_end_offset == cluster.log(1).log_end_offset, what="followers caught up")
    finally:
        cluster.stop()
