"""Producer ids for idempotent producers (InitProducerId), unique in the cluster, never reused.

Every broker hands out ids from its own range, ``node_id * 2**40`` up (Kafka has the
controller hand out blocks; a range per node id gives the same guarantee without a call):
two producers that bootstrap from different brokers never share an id, so their sequence
numbers never mix in a partition's producer state. Within the range, ids come from blocks
reserved on disk: before the first id of a block is given out, the end of the block is
persisted, so a broker that crashes and restarts starts after every id it could possibly
have handed out (a few ids are skipped; none is reused).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from broker_nodes.storage.atomic_files import write_atomically

PRODUCER_ID_FILE_NAME = "producer-id-block"  # in the data directory: the first id not yet reserved
PRODUCER_ID_BLOCK_SIZE = 1000  # ids reserved by one write of the file
MAX_PRODUCER_EPOCH = 32767  # int16; a producer whose epoch would pass it gets a new id instead
NODE_ID_SPACE_BITS = 40  # ids of node N are N * 2**40 .. (N + 1) * 2**40 - 1 (a trillion per node)


class ProducerIdError(Exception):
    retriable = False


class InvalidProducerIdMappingError(ProducerIdError):
    """A re-initialising producer named an id this broker never handed out (INVALID_PRODUCER_ID_MAPPING)."""

    def __init__(self, producer_id: int) -> None:
        super().__init__(f"producer id {producer_id} was never allocated in this cluster")
        self.producer_id = producer_id


class TransactionsUnsupportedError(ProducerIdError):
    """A transactional.id was given; transactions are not implemented yet (UNSUPPORTED_VERSION)."""

    def __init__(self, transactional_id: str) -> None:
        super().__init__(f"transactions are not supported yet (transactional id {transactional_id!r})")
        self.transactional_id = transactional_id


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


class ProducerIdManager:
    """Allocates unique producer ids.

    On disk: ``<data_dir>/producer-id-block`` holds one decimal number, the first id not
    reserved yet; replaced atomically. Invariant: every id this broker handed out is in its
    node's range and below the number on disk. Thread-safe.
    """

    def __init__(self, data_dir: Path, *, node_id: int = 0, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self._path = Path(data_dir) / PRODUCER_ID_FILE_NAME
        self._block_size = block_size
        self._lock = threading.Lock()
        self._range_start = node_id << NODE_ID_SPACE_BITS
        self._range_end = (node_id + 1) << NODE_ID_SPACE_BITS
        try:
            stored = int(self._path.read_text(encoding="ascii").strip())
        except FileNotFoundError:
            stored = 0
        # A file from before ids were ranged per node holds a number below the range: start at the range.
        self._next_id = max(stored, self._range_start)
        # Nothing of the persisted range is reserved for this process yet.
        self._reserved_end = self._next_id

    def init_producer_id(self, *, transactional_id: str = "", producer_id: int = -1, producer_epoch: int = -1) -> ProducerIdAndEpoch:
        """A new id with epoch 0, or, for a producer re-initialising with its id, the next epoch."""
        if transactional_id:
            raise TransactionsUnsupportedError(transactional_id)
        if producer_id < 0:
            return ProducerIdAndEpoch(self.allocate(), 0)
        with self._lock:
            # An id of this node's range must have been handed out here; another node's id is
            # that node's to vouch for (the producer re-initialises through whichever broker it reaches).
            if self._range_start <= producer_id < self._range_end and producer_id >= self._reserved_end:
                raise InvalidProducerIdMappingError(producer_id)
        if producer_epoch + 1 > MAX_PRODUCER_EPOCH:
            return ProducerIdAndEpoch(self.allocate(), 0)
        return ProducerIdAndEpoch(producer_id, max(producer_epoch, -1) + 1)

    def allocate(self) -> int:
        with self._lock:
            if self._next_id >= self._reserved_end:
                end = min(self._next_id + self._block_size, self._range_end)
                if end <= self._next_id:
                    raise ProducerIdError(f"this broker's producer id range is used up (node range ends at {self._range_end})")
                write_atomically(self._path, f"{end}\n".encode("ascii"))
                self._reserved_end = end
            producer_id = self._next_id
            self._next_id += 1
            return producer_id
