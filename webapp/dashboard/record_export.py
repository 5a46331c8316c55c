"""The message browser's downloads: the records a scan shows, as JSON or CSV.

Pure functions over :class:`~webapp.dashboard.data_plane.BrowsedRecord`. Keys, values and
header values are written as UTF-8 text when they are, else as base64, and each says which
(``key_encoding``/``value_encoding``: ``text``, ``base64`` or ``null``), so a download can
be read back byte for byte. Undecodable batches are written as a row with their error.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from webapp.dashboard.data_plane import BrowsedRecord

CSV_COLUMNS = [
    "partition",
    "offset",
    "timestamp_ms",
    "timestamp_utc",
    "key",
    "key_encoding",
    "value",
    "value_encoding",
    "headers",
    "error",
]


def encode_payload(payload: bytes | None) -> tuple[str | None, str]:
    """``(text, encoding)``: UTF-8 text as is, anything else base64; None for a null payload."""
    if payload is None:
        return None, "null"
    try:
        return payload.decode("utf-8"), "text"
    except UnicodeDecodeError:
        return base64.b64encode(payload).decode("ascii"), "base64"


def record_document(record: BrowsedRecord) -> dict[str, Any]:
    """One record as a JSON-ready dict (the CSV's columns, headers as a list of objects)."""
    key, key_encoding = encode_payload(record.key)
    value, value_encoding = encode_payload(record.value)
    headers = []
    for name, header_value in record.headers:
        text, encoding = encode_payload(header_value)
        headers.append({"name": name, "value": text, "encoding": encoding})
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp_ms": record.timestamp_ms,
        "timestamp_utc": record.timestamp.isoformat().replace("+00:00", "Z") if record.timestamp else None,
        "key": key,
        "key_encoding": key_encoding,
        "value": value,
        "value_encoding": value_encoding,
        "headers": headers,
        "error": record.error or None,
    }


def records_json(records: Sequence[BrowsedRecord]) -> str:
    return json.dumps([record_document(record) for record in records], ensure_ascii=False, indent=2)


def records_csv(records: Sequence[BrowsedRecord]) -> str:
    """RFC 4180 CSV with a header line; the headers column holds the JSON list of headers."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    for record in records:
        document = record_document(record)
        document["headers"] = json.dumps(document["headers"], ensure_ascii=False)
        writer.writerow({column: "" if document[column] is None else document[column] for column in CSV_COLUMNS})
    return out.getvalue()
