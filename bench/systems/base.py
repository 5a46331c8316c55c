"""The face every measured system shows the benchmark runner.

Each scenario method runs once, on fresh resources (a new topic or stream) that it removes
again before returning, so that runs neither help nor hurt each other. Timings start at the
first record handed to the client and end when the client has confirmed the last one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bench.measurements import LatencySample, ThroughputSample

# Produce latency is measured on one record in this many (a timestamp per record would cost
# more than some of the clients spend on the record itself).
LATENCY_SAMPLE_INTERVAL = 1000


class SystemUnavailable(RuntimeError):
    """The system cannot be reached (not running, wrong address); the runner reports and skips it."""

    retriable = True

    def __init__(self, system: str, reason: str) -> None:
        super().__init__(f"{system} unavailable: {reason}")
        self.system = system
        self.reason = reason


class BenchmarkIntegrityError(RuntimeError):
    """A run lost, duplicated or failed records; its timing would be meaningless."""

    retriable = False

    def __init__(self, system: str, reason: str) -> None:
        super().__init__(f"{system}: {reason}")
        self.system = system
        self.reason = reason


@dataclass(frozen=True)
class EndToEndPlan:
    """The end-to-end scenario: ``records`` sent at ``rate_per_second``, then up to ``drain_seconds`` to receive."""

    rate_per_second: int
    records: int
    drain_seconds: float = 10.0


class BenchmarkedSystem(Protocol):
    """A messaging system under test. Implementations are used from one thread."""

    name: str

    def describe_settings(self) -> str:
        """One line: the client settings the measurements use (for the report)."""
        ...

    def produce(self, records: int, values: list[bytes]) -> ThroughputSample:
        """Send ``records`` values (cycling through ``values``) with one producer; time until all are acknowledged."""
        ...

    def consume(self, records: int, values: list[bytes]) -> ThroughputSample:
        """Load ``records`` values untimed, then time one consumer reading them all from the beginning."""
        ...

    def end_to_end(self, plan: EndToEndPlan, values: list[bytes]) -> LatencySample:
        """Send at a fixed rate while a consumer in another process measures each record's latency."""
        ...

    def close(self) -> None:
        """Release connections; the system stays usable by other processes."""
        ...
