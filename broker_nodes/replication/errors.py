"""Typed errors of replication, each with a ``retriable`` flag; ``server.errors`` maps them to Kafka codes."""

from __future__ import annotations


# The two leader-epoch errors are raised by client fetches (replica_manager) and by followers'
# ReplicaFetch (replication.manager) alike; they live here, and not in replica_manager, so that
# replication never imports replica_manager (which holds the ReplicationManager).
class FencedLeaderEpochError(Exception):
    """The client knows an older leader epoch than the broker's (FENCED_LEADER_EPOCH): refresh metadata."""

    retriable = True

    def __init__(self, request_epoch: int, current_epoch: int) -> None:
        super().__init__(f"leader epoch {request_epoch} in the request is older than the current epoch {current_epoch}")
        self.request_epoch = request_epoch
        self.current_epoch = current_epoch


class UnknownLeaderEpochError(Exception):
    """The client knows a newer leader epoch than the broker's (UNKNOWN_LEADER_EPOCH)."""

    retriable = True

    def __init__(self, request_epoch: int, current_epoch: int) -> None:
        super().__init__(f"leader epoch {request_epoch} in the request is newer than the current epoch {current_epoch}")
        self.request_epoch = request_epoch
        self.current_epoch = current_epoch


class NotEnoughReplicasError(Exception):
    """acks=all with fewer in-sync replicas than min.insync.replicas (NOT_ENOUGH_REPLICAS): nothing was appended."""

    retriable = True

    def __init__(self, topic: str, partition: int, isr_size: int, min_insync_replicas: int) -> None:
        super().__init__(
            f"partition {partition} of topic {topic!r} has {isr_size} in-sync replicas, fewer than min.insync.replicas {min_insync_replicas}; nothing was appended"
        )
        self.topic = topic
        self.partition = partition
        self.isr_size = isr_size
        self.min_insync_replicas = min_insync_replicas


class LowWatermarkTimedOutError(Exception):
    """DeleteRecords: some in-sync replica had not deleted up to the offset before the request's timeout (REQUEST_TIMED_OUT)."""

    retriable = True

    def __init__(self, topic: str, partition: int, required_offset: int, low_watermark: int, timeout_ms: int) -> None:
        super().__init__(
            f"partition {partition} of topic {topic!r}: the in-sync replicas deleted up to offset {low_watermark}, not {required_offset}, "
            f"within {timeout_ms} ms; the leader deleted the records and the followers follow at their next fetch"
        )
        self.topic = topic
        self.partition = partition
        self.required_offset = required_offset
        self.low_watermark = low_watermark
        self.timeout_ms = timeout_ms


class NotEnoughReplicasAfterAppendError(Exception):
    """The batch reached every in-sync replica, but the ISR had shrunk below min.insync.replicas meanwhile."""

    retriable = True

    def __init__(self, topic: str, partition: int, isr_size: int, min_insync_replicas: int) -> None:
        super().__init__(
            f"partition {partition} of topic {topic!r} was written to {isr_size} in-sync replicas, fewer than min.insync.replicas {min_insync_replicas}"
        )
        self.topic = topic
        self.partition = partition
        self.isr_size = isr_size
        self.min_insync_replicas = min_insync_replicas


class ReplicationTimedOutError(Exception):
    """acks=all: the in-sync replicas did not all have the batch before the request's timeout (REQUEST_TIMED_OUT)."""

    retriable = True

    def __init__(self, topic: str, partition: int, required_offset: int, high_watermark: int, timeout_ms: int) -> None:
        super().__init__(
            f"partition {partition} of topic {topic!r}: the in-sync replicas reached offset {high_watermark}, "
            f"not {required_offset}, within {timeout_ms} ms; the batch is in the leader's log and may still be replicated"
        )
        self.topic = topic
        self.partition = partition
        self.required_offset = required_offset
        self.high_watermark = high_watermark
        self.timeout_ms = timeout_ms


class ReplicationWaitersFullError(Exception):
    """acks=all refused before appending: as many requests as the broker lets wait for their in-sync
    replicas are waiting already (REQUEST_TIMED_OUT, retriable; nothing was appended).

    Each waiting request holds one of the broker's request threads; without this limit they could
    take every thread, and the followers' fetches they wait for could then not be served.
    """

    retriable = True

    def __init__(self, limit: int) -> None:
        super().__init__(f"not appended: {limit} acks=all requests are already waiting for their in-sync replicas on this broker (4 x num.io.threads); retry")
        self.limit = limit
