"""Stage names of a consumer's Fetch in the brokers' stage-trace files (``WEIR_REPLICATION_TRACE``).

Brokers started with the trace variable stamp these beside the replication stages (same file,
same line layout: ``log_formats.replication_trace``); ``bench.latency_breakdown`` reads them to
split the broker's part of a record's end-to-end latency. Keyed by the fetch's (stored topic
name, partition, fetch offset); the replica field is -1. The leader's ``append`` stamp
(``replication_trace.APPEND``, the batch's base offset) is the other end.
"""

from __future__ import annotations

FETCH_ARRIVED = "consumer_fetch_arrived"  # the Fetch reached the fetch logic (before its first read)
FETCH_WOKE = "consumer_fetch_woke"  # a parked Fetch was woken (by an append, or its deadline) and reads again
ANSWER_BUILT = "consumer_answer_built"  # its read is the answer (records from the fetch offset), outcomes built
ANSWER_RETURNED = "consumer_answer_returned"  # the gRPC servicer built the protobuf answer and returns it to gRPC
