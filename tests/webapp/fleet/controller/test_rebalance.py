"""The periodic preferred-leader election's settings and schedule."""

from __future__ import annotations

import pytest

from tests.webapp.fleet.controller.harness import ManualMonotonic
from webapp.controller.rebalance import RebalanceConfig, RebalanceConfigError, RebalanceSchedule

NAMES = ("WEIR_AUTO_LEADER_REBALANCE_ENABLE", "WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", "WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE")


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
        if hasattr(settings, name):
            delattr(settings, name)


def test_defaults_are_kafkas() -> None:
    assert RebalanceConfig.from_settings() == RebalanceConfig(enabled=True, check_interval_seconds=300.0, imbalance_percentage=10.0)


def test_environment_and_settings_are_read(monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WEIR_AUTO_LEADER_REBALANCE_ENABLE", "false")
    monkeypatch.setenv("WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", "30")
    settings.WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = 25
    assert RebalanceConfig.from_settings() == RebalanceConfig(enabled=False, check_interval_seconds=30.0, imbalance_percentage=25.0)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("WEIR_AUTO_LEADER_REBALANCE_ENABLE", "sometimes", "WEIR_AUTO_LEADER_REBALANCE_ENABLE must be true or false, not 'sometimes'"),
        ("WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", "soon", "WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS must be a number, not 'soon'"),
        ("WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", "0", "WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS must be positive, not 0.0"),
        ("WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE", "120", "WEIR_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE must be between 0 and 100, not 120.0"),
    ],
)
def test_a_bad_value_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(RebalanceConfigError) as raised:
        RebalanceConfig.from_settings()
    assert str(raised.value) == message


def test_checks_are_due_one_interval_apart() -> None:
    clock = ManualMonotonic()
    schedule = RebalanceSchedule(RebalanceConfig(check_interval_seconds=300.0), clock)
    due_at = []
    for second in range(0, 1000, 10):
        clock.now = float(second)
        if schedule.due():
            due_at.append(second)
    assert due_at == [300, 600, 900]


def test_a_disabled_rebalance_is_never_due() -> None:
    clock = ManualMonotonic()
    schedule = RebalanceSchedule(RebalanceConfig(enabled=False, check_interval_seconds=1.0), clock)
    clock.now = 1000.0
    assert not schedule.due()
