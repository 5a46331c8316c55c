"""What a benchmark invocation measures, after command-line defaults are applied."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SCENARIOS = ("produce", "consume", "e2e")
PEERS = ("redis", "nats")
# Record counts are given for records of this size; larger records get proportionally fewer,
# so that every size moves the same number of bytes and a run takes a few seconds.
REFERENCE_RECORD_SIZE = 100
# Record counts are rounded to whole multiples of this (and never fall below it).
RECORD_COUNT_GRANULE = 1000

DEFAULT_RECORDS = 1_000_000
DEFAULT_SIZES = (100, 1024)
DEFAULT_RUNS = 3
DEFAULT_E2E_RATE = 5000
DEFAULT_E2E_SECONDS = 10.0
# --quick: enough to prove every path works, small enough for a CI smoke test.
QUICK_RECORDS = 20_000
QUICK_RUNS = 1
QUICK_E2E_SECONDS = 1.0
# Samples per second of the broker profile (--profile-broker): py-spy's own default.
DEFAULT_BROKER_PROFILE_RATE = 100


@dataclass(frozen=True)
class Targets:
    """The issue's targets for 100-byte records, and Kafka's published single-producer figures."""

    produce_records_per_second: int = 300_000
    consume_records_per_second: int = 600_000
    e2e_p99_ms: float = 10.0
    # Issue 19 goal 1: at 5,000 records/s and linger.ms=0, with acks=1 and with acks=all on RF=3.
    e2e_goal_p99_ms: float = 1.0
    e2e_goal_p999_ms: float = 3.0
    kafka_produce_records_per_second: int = 821_557
    kafka_consume_records_per_second: int = 940_521


@dataclass(frozen=True)
class BenchSettings:
    scenarios: tuple[str, ...]
    records: int
    sizes: tuple[int, ...]
    runs: int
    peers: tuple[str, ...]
    compression: str
    bootstrap: str | None
    profile_directory: Path | None
    delivery: str
    e2e_rate: int
    e2e_seconds: float
    redis_url: str
    nats_url: str
    # --profile-broker: where py-spy's collapsed stacks of the started broker go (None: not profiled).
    broker_profile_directory: Path | None = None
    broker_profile_rate: int = DEFAULT_BROKER_PROFILE_RATE
    # e2e beside the one started broker: acks=all on an RF=3 topic of three started brokers (issue 19 goal 1).
    replicated_e2e: bool = True

    def records_for(self, record_size: int) -> int:
        """Records per produce or consume run for ``record_size``-byte records."""
        scaled = self.records * REFERENCE_RECORD_SIZE // max(record_size, REFERENCE_RECORD_SIZE)
        return max(RECORD_COUNT_GRANULE, round(scaled / RECORD_COUNT_GRANULE) * RECORD_COUNT_GRANULE)

    def e2e_records(self) -> int:
        """Records per end-to-end run: ``e2e_seconds`` at ``e2e_rate``."""
        return max(1, round(self.e2e_rate * self.e2e_seconds))
