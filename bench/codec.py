"""Micro-benchmark of the record codec's per-record loops: pure Python against weir._records_native,
in the same run, records per second of CPU-bound work (no broker, no network).

    python -m bench.codec [--records 200000] [--record-bytes 100] [--batch-records 1000] [--runs 3]

Three loops, in the order the native codec took them over:

- walk: the broker's validation walk of a produced batch (broker_nodes/storage/batch_validation.py);
- decode: ``weir.records.decode_records`` of one batch's records section, the consumer's loop;
- encode: ``RecordBatchBuilder.append`` of every record and ``build()``, the producer's loop.

Each figure is the best of ``--runs`` passes over ``--records`` records (keyed, ``--record-bytes``
values from bench.payloads, no headers, no compression) in batches of ``--batch-records``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table

from bench.payloads import value_pool
from broker_nodes.storage import batch_validation
from weir import records
from weir.records import HEADER_SIZE, RecordBatchBuilder

BASE_TIMESTAMP = 1_700_000_000_000


@contextmanager
def _codec(native: bool) -> Iterator[None]:
    saved = records._native
    records._native = saved if native else None
    try:
        yield
    finally:
        records._native = saved


def _rows(count: int, record_bytes: int) -> list[tuple[int, bytes, bytes]]:
    values = value_pool(record_bytes)
    return [(BASE_TIMESTAMP + index // 10, b"key-%d" % (index % 1000), values[index % len(values)]) for index in range(count)]


def _encode(rows: list[tuple[int, bytes, bytes]]) -> bytes:
    builder = RecordBatchBuilder()
    append = builder.append
    for timestamp, key, value in rows:
        append(timestamp, key, value)
    return builder.build()


def _best_rates(python_work: Callable[[], None], native_work: Callable[[], None], records_done: int, runs: int) -> tuple[float, float]:
    """(Python, native) records/s, each the best of ``runs`` passes; the passes alternate so that a
    loaded machine's changing load falls on both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(runs):
        for index, (native, work) in enumerate(((False, python_work), (True, native_work))):
            with _codec(native):
                started = time.perf_counter()
                work()
                best[index] = min(best[index], time.perf_counter() - started)
    return records_done / best[0], records_done / best[1]


def measure(records_total: int, record_bytes: int, batch_records: int, runs: int) -> dict[str, tuple[float, float]]:
    """{loop: (Python records/s, native records/s)}."""
    if not records.native_codec_active():
        raise SystemExit("weir._records_native is not built (or WEIR_PURE_PYTHON is set): nothing to compare")
    rows = _rows(records_total, record_bytes)
    chunks = [rows[start : start + batch_records] for start in range(0, len(rows), batch_records)]
    with _codec(native=False):
        batches = [_encode(chunk) for chunk in chunks]
    sections = [(batch[HEADER_SIZE:], records.read_batch_header(batch)) for batch in batches]
    done = len(rows)

    # Each batch's result is dropped before the next, as a broker or consumer does: keeping every
    # decoded record alive would measure the garbage collector walking them instead.
    def walk(walker: Callable[..., tuple[int, int]]) -> Callable[[], None]:
        def work() -> None:
            for section, header in sections:
                walker(section, header.records_count, require_keys=False)

        return work

    def decode() -> None:
        for section, header in sections:
            records.decode_records(section, header)

    def encode() -> None:
        for chunk in chunks:
            _encode(chunk)

    figures: dict[str, tuple[float, float]] = {}
    figures["walk (broker)"] = _best_rates(walk(batch_validation.walk_records_python), walk(batch_validation.walk_records), done, runs)
    figures["decode (consumer)"] = _best_rates(decode, decode, done, runs)
    figures["encode (producer)"] = _best_rates(encode, encode, done, runs)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.codec", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--batch-records", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args(argv)
    for name in ("records", "record_bytes", "batch_records", "runs"):
        if getattr(arguments, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    figures = measure(arguments.records, arguments.record_bytes, arguments.batch_records, arguments.runs)
    table = Table(
        title=f"record codec, {arguments.records:,} records of {arguments.record_bytes} bytes, batches of {arguments.batch_records}, best of {arguments.runs}"
    )
    for column in ("loop", "Python rec/s", "native rec/s", "speed-up"):
        table.add_column(column, justify="left" if column == "loop" else "right")
    for name, (python_rate, native_rate) in figures.items():
        table.add_row(name, f"{python_rate:,.0f}", f"{native_rate:,.0f}", f"{native_rate / python_rate:.1f}x")
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
