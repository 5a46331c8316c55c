"""A fake ``__usage`` for metering tests: it stores what it is sent and answers on poll."""

from __future__ import annotations

from broker_nodes.metering.sink import Acknowledgement, SinkFailure
from log_formats.usage_records import UsageRow, decode


class FakeSink:
    """Records every send; ``poll`` acknowledges (or fails, while ``failure`` is set) what was sent since."""

    def __init__(self, *, exists: bool = True) -> None:
        self.exists = exists
        self.failure: SinkFailure | None = None
        self.answering = True  # False: sent rows stay in flight (an unreachable leader)
        self.sent: list[tuple[bytes, bytes, int]] = []  # (key, value, timestamp) of every send, repeats included
        self.stored: list[bytes] = []  # values acknowledged
        self.lookups = 0
        self.closed = False
        self._in_flight: list[tuple[bytes, Acknowledgement]] = []

    def topic_exists(self) -> bool:
        self.lookups += 1
        return self.exists

    def send(self, key: bytes, value: bytes, timestamp_ms: int, on_done: Acknowledgement) -> None:
        self.sent.append((key, value, timestamp_ms))
        self._in_flight.append((value, on_done))

    def poll(self, timeout_seconds: float) -> None:
        if not self.answering:
            return
        answering, self._in_flight = self._in_flight, []
        for value, on_done in answering:
            if self.failure is None:
                self.stored.append(value)
                on_done(None)
            else:
                on_done(self.failure)

    def close(self, timeout_seconds: float) -> None:
        self.closed = True

    def stored_rows(self) -> list[UsageRow]:
        return [decode(value) for value in self.stored]
