"""The figures of one usage bucket (``UsageAggregate``), in the order the writer, the API and the CSV export use.

Kept free of Django imports: the writer is imported by Spark jobs before Django is set up.
"""

from __future__ import annotations

# Integer figures: sums over the bucket, and the storage average and peak.
USAGE_COUNTERS = (
    "bytes_in",
    "bytes_out",
    "records_in",
    "records_out",
    "produce_requests",
    "fetch_requests",
    "throttle_time_ms",
    "storage_bytes_avg",
    "storage_bytes_peak",
)
USAGE_FIGURES = (*USAGE_COUNTERS, "partition_hours")
