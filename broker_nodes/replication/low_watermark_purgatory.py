"""Where DeleteRecords waits for the in-sync replicas to delete too: low-watermark moves wake it.

Kafka's delete-records purgatory: the leader raises its own log start offset at once, but
answers only when the partition's *low watermark* — the smallest log start offset among the
in-sync replicas — reached the requested offset, so that no replica that may become leader
still serves the deleted records. Followers learn the leader's log start from fetch answers
and report theirs in their next fetch (``ReplicaFetchPartition.log_start_offset``); each such
report that moves the low watermark wakes the waiters it satisfies. The waiters are the
acks=all ones (an offset a partition's watermark must reach), parked on their own waitlist so
that high-watermark moves never wake a deletion and low-watermark moves never wake a produce.
"""

from __future__ import annotations

from broker_nodes.replication.purgatory import AcksPurgatory


class LowWatermarkPurgatory(AcksPurgatory):
    """Parked DeleteRecords by partition. Thread-safe; after :meth:`close` every waiter is woken at once."""

    def on_low_watermark(self, topic: str, partition: int, low_watermark: int) -> None:
        """The partition's low watermark reached ``low_watermark``: wake the deletions it satisfies."""
        self.on_high_watermark(topic, partition, low_watermark)
