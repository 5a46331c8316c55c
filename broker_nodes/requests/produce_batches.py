"""What one partition's Produce data may hold, read from its batch headers alone (no record is decoded).

A partition's produce data is exactly one RecordBatch v2, as Kafka's ProduceRequest requires from
version 3 on ("exactly one record batch per partition", answered INVALID_RECORD for that
partition). Weir holds both front doors to that rule (the Kafka listener serves Produce v3+
only): a transactional request is verified with its coordinator (KIP-890) by the producer id
and epoch of each partition's batch, so a second batch behind a plain first one would be
appended without any verification and could open a transaction no coordinator knows (a
hanging one). One batch per partition also lets every check in front of the append read one
header.

Malformed headers (too short, a length below the minimum, a length past the end) are left to
the append, which refuses them with the precise error (CORRUPT_MESSAGE); so is an entry holding
no batch at all.
"""

from __future__ import annotations

from collections.abc import Iterator

from broker_nodes.storage.errors import InvalidRecordError
from weir.records import ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET, CONTROL_FLAG_MASK, LOG_OVERHEAD, MIN_BATCH_LENGTH, TRANSACTIONAL_FLAG_MASK


class MultipleBatchesError(InvalidRecordError):
    """A partition's produce data holding more than one record batch (INVALID_RECORD); nothing of it is appended.

    ``topic`` is the caller's plain name; ``extra_bytes`` is how much follows the first batch.
    """

    def __init__(self, topic: str, partition: int, extra_bytes: int) -> None:
        super().__init__(
            f"the produce data for topic {topic!r} partition {partition} holds {extra_bytes} bytes after its first record batch, "
            "and a Produce carries exactly one record batch per partition (Kafka's rule from Produce v3 on); nothing of it was appended"
        )
        self.topic = topic
        self.partition = partition
        self.extra_bytes = extra_bytes


def bytes_after_first_batch(records: bytes) -> int:
    """How many bytes of ``records`` (not yet validated) follow its first batch; 0 when the first header is malformed or absent."""
    if len(records) < LOG_OVERHEAD:
        return 0
    batch_length = int.from_bytes(records[BATCH_LENGTH_OFFSET:LOG_OVERHEAD], "big", signed=True)
    if batch_length < MIN_BATCH_LENGTH:
        return 0
    return max(0, len(records) - LOG_OVERHEAD - batch_length)


def single_batch_refusal(topic: str, partition: int, records: bytes) -> MultipleBatchesError | None:
    """Why this partition's produce data is refused for holding more than one batch, else None."""
    extra_bytes = bytes_after_first_batch(records)
    return MultipleBatchesError(topic, partition, extra_bytes) if extra_bytes else None


def first_transactional_batch(records: bytes) -> int | None:
    """The index of the first batch in ``records`` (not yet validated) with the transactional bit and not the control bit, else None.

    Walks every batch, not only the first, so that a request naming no transactional id is
    refused whatever its entries hold. A control batch is left to the append, which refuses
    any from a client with its own error.
    """
    for batch_index, flags in _batch_flags(records):
        if flags & TRANSACTIONAL_FLAG_MASK and not flags & CONTROL_FLAG_MASK:
            return batch_index
    return None


def _batch_flags(records: bytes) -> Iterator[tuple[int, int]]:
    """(batch index, low byte of the attributes) of each batch whose attributes lie in ``records``; a malformed length ends the walk."""
    position, batch_index, end = 0, 0, len(records)
    while position + ATTRIBUTES_OFFSET + 2 <= end:
        # attributes is a big-endian int16: the flags live in its low byte.
        yield batch_index, records[position + ATTRIBUTES_OFFSET + 1]
        batch_length = int.from_bytes(records[position + BATCH_LENGTH_OFFSET : position + LOG_OVERHEAD], "big", signed=True)
        if batch_length < MIN_BATCH_LENGTH:
            return
        position += LOG_OVERHEAD + batch_length
        batch_index += 1
