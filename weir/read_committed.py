"""Dropping aborted transactions from a read_committed fetch, as Kafka's consumers do.

A fetch at read_committed returns stored batches below the last stable offset together with
the transactions aborted in that range, each as (producer id, first offset). The batches of
an aborted transaction are still in the bytes; the consumer drops them:

- walking the batches in offset order, an aborted transaction whose first offset is at or
  below the current batch's base offset makes its producer "aborted";
- a transactional data batch of an aborted producer is dropped;
- a control batch (a transaction marker) is never returned as records, and it ends its
  producer's aborted state: a producer has at most one open transaction per partition, so
  its next marker after an aborted transaction's first offset is that transaction's ABORT.

This is the rule of Kafka's Java consumer (``CompletedFetch.nextFetchedRecord``) and of
librdkafka; it needs no decoding of the markers. The state lives for one fetch response,
since each response lists every aborted transaction overlapping its range.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from weir.records import BatchHeader, iter_batch_positions


def committed_batches(buffer: bytes | bytearray | memoryview, aborted: Iterable[tuple[int, int]]) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of the batches of ``buffer`` a read_committed consumer returns records from.

    ``aborted`` holds (producer id, first offset) of the response's aborted transactions, in
    any order. Control batches and batches of aborted transactions are left out.
    """
    pending = [(first_offset, producer_id) for producer_id, first_offset in aborted]
    heapq.heapify(pending)
    aborted_producers: set[int] = set()
    for position, header in iter_batch_positions(buffer):
        while pending and pending[0][0] <= header.base_offset:
            aborted_producers.add(heapq.heappop(pending)[1])
        if header.is_control:
            aborted_producers.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborted_producers:
            continue
        yield position, header
