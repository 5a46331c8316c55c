"""The state of the partitions a broker leads, for the ``partition`` rows of each window.

Leadership is decided the way the request path decides it (``ReplicaManager.leader_epoch``):
a partition of the cluster map whose leader is another broker is skipped; standalone, every
hosted partition is led with epoch 0. Internal topics (``__consumer_offsets``, ``__usage``)
are left out: they belong to no tenant. Reads the logs' offsets and segment sizes without
their locks (each value is a consistent snapshot on its own), so it never holds up appends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from broker_nodes.cluster_state import NotLeaderOrFollowerError
from broker_nodes.storage.log import PartitionLog
from log_formats.topic_names import is_internal_topic_name


@dataclass(frozen=True, slots=True)
class PartitionStats:
    topic: str  # qualified (tenant~name)
    partition: int
    log_size_bytes: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    leader_epoch: int


def led_partition_stats(logs: Iterable[PartitionLog], leader_epoch: Callable[[str, int], int]) -> list[PartitionStats]:
    """Stats of every log in ``logs`` that this broker leads (``leader_epoch`` raises
    NotLeaderOrFollowerError for the others), internal topics and closed logs left out."""
    stats = []
    for log in logs:
        if is_internal_topic_name(log.topic) or log.closed:
            continue
        try:
            epoch = leader_epoch(log.topic, log.partition)
        except NotLeaderOrFollowerError:
            continue
        stats.append(PartitionStats(log.topic, log.partition, log.size_in_bytes, log.log_start_offset, log.log_end_offset, log.high_watermark, epoch))
    return stats
