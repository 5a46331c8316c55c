"""Usage as CSV: one stable header row, then one line per usage row.

The columns never change order; new columns are only ever appended, so that spreadsheets
and billing scripts reading by position keep working. Times are ISO 8601 in UTC with ``Z``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from datetime import UTC

from webapp.metering.figures import USAGE_FIGURES
from webapp.metering.models import UsageAggregate

USAGE_CSV_COLUMNS = ("tenant_id", "topic", "granularity", "bucket_start", *USAGE_FIGURES)


def csv_lines(tenant_public_id: str, rows: Iterable[UsageAggregate]) -> Iterator[str]:
    """The header line, then one line per row (each ending with CRLF, as csv writes them)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: Iterable[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(USAGE_CSV_COLUMNS)
    for row in rows:
        yield line(
            [
                tenant_public_id,
                row.topic,
                row.granularity,
                row.bucket_start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                row.bytes_in,
                row.bytes_out,
                row.records_in,
                row.records_out,
                row.produce_requests,
                row.fetch_requests,
                row.throttle_time_ms,
                row.storage_bytes_avg,
                row.storage_bytes_peak,
                repr(float(row.partition_hours)),
            ]
        )
