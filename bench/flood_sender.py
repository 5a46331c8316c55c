"""The flooding tenant of ``python -m bench flood``, in a process of its own.

``python -m bench.flood_sender ADDRESS MAX_REQUEST_BYTES THREADS`` sends maximum-size Produce
requests (just under ``MAX_REQUEST_BYTES`` of records, one batch per partition of the flood
topic) from ``THREADS`` threads back to back as the flooding tenant, and prints its cumulative
counts as one line ``accepted refused failed`` every 100 ms until it gets SIGTERM or its
standard input closes; a last line ``failure: ...`` names the first failure other than a refusal
for lack of room (retried after 10 ms, as the SDK would). A process of its own, so that
building and sending 8 MiB messages does not compete with the well-behaved tenant's producer
for the benchmark's interpreter lock. Its key and secret come from the environment
(``WEIR_BENCH_FLOOD_KEY`` / ``WEIR_BENCH_FLOOD_SECRET``), not the command line.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import grpc

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir.cluster import ERROR_CODE_TRAILER
from weir.records import RecordBatchBuilder

KEY_VARIABLE = "WEIR_BENCH_FLOOD_KEY"
SECRET_VARIABLE = "WEIR_BENCH_FLOOD_SECRET"
FLOOD_TOPIC = "bulk"
FLOOD_PARTITIONS = 8
# Room left in a flood request for its protobuf fields and each batch's header.
FLOOD_OVERHEAD_BYTES = 16 * 1024
RETRY_PAUSE_SECONDS = 0.010  # a refused flood request is sent again after this long
REPORT_SECONDS = 0.1


def flood_request(max_request_bytes: int) -> broker_pb2.ProduceRequest:
    """A Produce request carrying just under ``max_request_bytes`` of records, one batch per partition."""
    batch_value_bytes = (max_request_bytes - FLOOD_OVERHEAD_BYTES) // FLOOD_PARTITIONS
    builder = RecordBatchBuilder()
    builder.append(int(time.time() * 1000), None, os.urandom(batch_value_bytes))
    records = builder.build()
    return broker_pb2.ProduceRequest(
        acks=1,
        timeout_ms=30_000,
        topics=[
            broker_pb2.ProduceTopicData(
                topic=FLOOD_TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=index, records=records) for index in range(FLOOD_PARTITIONS)]
            )
        ],
    )


class Flood:
    """``threads`` threads sending ``request`` back to back with ``metadata`` until :meth:`stop`."""

    def __init__(self, address: str, request: broker_pb2.ProduceRequest, threads: int, metadata: tuple[tuple[str, str], ...]) -> None:
        self._channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 2 * request.ByteSize())])
        self._stub = broker_pb2_grpc.BrokerStub(self._channel)
        self._request = request
        self._metadata = metadata
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self.accepted = 0
        self.refused = 0
        self.failures: list[str] = []
        self._threads = [threading.Thread(target=self._send, name=f"flood-{index}", daemon=True) for index in range(threads)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self.stopped.set()
        for thread in self._threads:
            thread.join(60)
        self._channel.close()

    def counts(self) -> str:
        with self._lock:
            return f"{self.accepted} {self.refused} {len(self.failures)}"

    def _send(self) -> None:
        while not self.stopped.is_set():
            try:
                self._stub.Produce(self._request, metadata=self._metadata, timeout=60)
                with self._lock:
                    self.accepted += 1
                continue
            except grpc.RpcError as error:
                refused = error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and any(key == ERROR_CODE_TRAILER for key, _ in error.trailing_metadata() or ())
                with self._lock:
                    if refused:
                        self.refused += 1
                    else:
                        self.failures.append(f"{error.code().name}: {error.details()}")
            self.stopped.wait(RETRY_PAUSE_SECONDS)


def main(argv: list[str]) -> int:
    address, max_request_bytes, threads = argv[0], int(argv[1]), int(argv[2])
    metadata = (("x-weir-api-key", os.environ[KEY_VARIABLE]), ("x-weir-api-secret", os.environ[SECRET_VARIABLE]))
    flood = Flood(address, flood_request(max_request_bytes), threads, metadata)
    signal.signal(signal.SIGTERM, lambda signum, frame: flood.stopped.set())
    # The parent closing our standard input (or dying) ends the flood too.
    threading.Thread(target=lambda: (sys.stdin.read(), flood.stopped.set()), daemon=True).start()
    flood.start()
    while not flood.stopped.wait(REPORT_SECONDS):
        print(flood.counts(), flush=True)
    flood.stop()
    print(flood.counts(), flush=True)
    if flood.failures:
        print(f"failure: {flood.failures[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
