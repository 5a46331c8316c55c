"""When the active controller runs the preferred-leader election on its own (Kafka's
``auto.leader.rebalance.enable``).

After failovers, leaderships pile up on the brokers that stayed; once the preferred replicas
are back in their ISRs, the periodic election gives leadership back to them, but only for
brokers whose share of partitions they prefer and do not lead is above
``leader.imbalance.per.broker.percentage`` (small imbalances are not worth a leader change,
which makes every client of the partition refresh its metadata).

Settings (Django settings first, then the environment; documented in ``webapp.settings``):
WEIR_AUTO_LEADER_REBALANCE_ENABLE, WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

DEFAULT_ENABLED = True  # auto.leader.rebalance.enable
DEFAULT_CHECK_INTERVAL_SECONDS = 300.0  # leader.imbalance.check.interval.seconds
DEFAULT_IMBALANCE_PERCENTAGE = 10.0  # leader.imbalance.per.broker.percentage

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class RebalanceConfigError(ValueError):
    """A rebalance setting has a value that is not allowed. Not retriable."""

    retriable = False


@dataclass(frozen=True)
class RebalanceConfig:
    enabled: bool = DEFAULT_ENABLED
    check_interval_seconds: float = DEFAULT_CHECK_INTERVAL_SECONDS
    imbalance_percentage: float = DEFAULT_IMBALANCE_PERCENTAGE

    def __post_init__(self) -> None:
        if not self.check_interval_seconds > 0:
            raise RebalanceConfigError(f"WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS must be positive, not {self.check_interval_seconds}")
        if not 0 <= self.imbalance_percentage <= 100:
            raise RebalanceConfigError(f"WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE must be between 0 and 100, not {self.imbalance_percentage}")

    @classmethod
    def from_settings(cls) -> RebalanceConfig:
        """The deployment's settings; ``RebalanceConfigError`` names the variable that is wrong."""
        return cls(
            enabled=_boolean("WEIR_AUTO_LEADER_REBALANCE_ENABLE", DEFAULT_ENABLED),
            check_interval_seconds=_number("WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", DEFAULT_CHECK_INTERVAL_SECONDS),
            imbalance_percentage=_number("WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE", DEFAULT_IMBALANCE_PERCENTAGE),
        )


def _configured(name: str) -> object | None:
    value = getattr(settings, name, None)
    if value is None:
        value = os.environ.get(name)
    return None if value == "" else value


def _boolean(name: str, default: bool) -> bool:
    value = _configured(name)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise RebalanceConfigError(f"{name} must be true or false, not {value!r}")


def _number(name: str, default: float) -> float:
    value = _configured(name)
    if value is None:
        return default
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise RebalanceConfigError(f"{name} must be a number, not {value!r}") from None


class RebalanceSchedule:
    """Says when the next imbalance check is due: one interval after the controller became
    active, then one interval after each check. ``monotonic`` returns seconds.

    Not thread-safe: one thread (the controller's periodic loop) asks it.
    """

    def __init__(self, config: RebalanceConfig, monotonic: Callable[[], float]) -> None:
        self._config = config
        self._monotonic = monotonic
        self._next = monotonic() + config.check_interval_seconds

    def due(self) -> bool:
        """True when a check should run now (and schedules the next one); never when disabled."""
        if not self._config.enabled:
            return False
        now = self._monotonic()
        if now < self._next:
            return False
        self._next = now + self._config.check_interval_seconds
        return True
