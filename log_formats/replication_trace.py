"""The replication stage-trace files: what brokers started with ``WEIR_REPLICATION_TRACE`` write, and ``bench`` reads.

``broker_nodes.replication.stage_trace`` stamps the stages of the acks=all round trip and writes
them at exit to ``<prefix>.<pid>``; ``bench.replication_stages`` lines them up per record. One
tab-separated line per stamp: stage name, topic, partition, offset, replica (-1: the leader's own),
CLOCK_MONOTONIC nanoseconds. The stage names are below; what each means is in ``stage_trace``.
"""

from __future__ import annotations

TRACE_VARIABLE = "WEIR_REPLICATION_TRACE"  # the environment variable naming the file prefix; unset: no trace

# Leader.
APPEND = "append"
FETCH_WOKE = "fetch_woke"
ANSWER_BUILT = "answer_built"
ANSWER_RETURNED = "answer_returned"
FETCH_ARRIVED = "fetch_arrived"
HIGH_WATERMARK = "high_watermark"
ACKS_DONE = "acks_done"
# Follower.
ANSWER_ARRIVED = "answer_arrived"
APPENDED = "appended"
FETCH_SENT = "fetch_sent"
FETCH_DEQUEUED = "fetch_dequeued"

FIELDS = 6  # stage, topic, partition, offset, replica, nanoseconds


def format_line(stage: str, topic: str, partition: int, offset: int, replica: int, nanoseconds: int) -> str:
    return f"{stage}\t{topic}\t{partition}\t{offset}\t{replica}\t{nanoseconds}\n"
