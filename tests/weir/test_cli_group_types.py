"""`weir groups list|describe` show each group's type (CONSUMER: KIP-848; CLASSIC: JoinGroup/SyncGroup) and list by type, against an in-memory admin."""

from __future__ import annotations

import io
import json
from contextlib import closing

import pytest

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from weir import ConsumerGroupState, ConsumerGroupType
from weir.cli import connection, main


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> FakeGroupAdmin:
    """Group sdk-app is a KIP-848 group, librdkafka-app a classic one of a stock client, offsets-only a classic group without members."""
    fake = FakeGroupAdmin()
    fake.add_topic("orders", [10, 20])
    fake.add_group("sdk-app", {("orders", 0): 4}, [FakeMember("m-1", "weir-sdk", [("orders", 0)])], assignor="uniform")
    fake.add_group(
        "librdkafka-app",
        {("orders", 1): 3},
        [FakeMember("rdkafka-1", "rdkafka", [("orders", 1)])],
        assignor="range",
        group_type=ConsumerGroupType.CLASSIC,
        state=ConsumerGroupState.COMPLETING_REBALANCE,
    )
    fake.add_group("offsets-only", {("orders", 0): 1}, group_type=ConsumerGroupType.CLASSIC)
    monkeypatch.setattr(connection, "admin_client", lambda args, environ: closing(fake))
    return fake


def weir(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr, environ={})
    return code, stdout.getvalue(), stderr.getvalue()


def ok(*argv: str) -> str:
    code, out, err = weir(*argv)
    assert code == 0, err
    return out


def test_list_shows_each_groups_type(admin: FakeGroupAdmin) -> None:
    listed = json.loads(ok("groups", "list", "--output", "json"))
    table = ok("groups", "list")

    assert [(group["group_id"], group["type"], group["state"]) for group in listed] == [
        ("librdkafka-app", "CLASSIC", "COMPLETING_REBALANCE"),
        ("offsets-only", "CLASSIC", "EMPTY"),
        ("sdk-app", "CONSUMER", "STABLE"),
    ]
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.split() and line.split()[0] in ("librdkafka-app", "sdk-app")}
    assert "CLASSIC" in rows["librdkafka-app"] and "CONSUMER" in rows["sdk-app"] and "Type" in table


def test_list_filters_by_type_in_any_case(admin: FakeGroupAdmin) -> None:
    def listed(*types: str) -> list[str]:
        return [group["group_id"] for group in json.loads(ok("groups", "list", *[arg for value in types for arg in ("--type", value)], "--output", "json"))]

    assert listed("classic") == ["librdkafka-app", "offsets-only"]
    assert listed("CONSUMER") == ["sdk-app"]
    assert listed("consumer,Classic") == ["librdkafka-app", "offsets-only", "sdk-app"]


def test_list_with_unknown_type_is_a_usage_error(admin: FakeGroupAdmin) -> None:
    code, _, err = weir("groups", "list", "--type", "share")

    assert code == 2 and "unknown group type 'share'" in err and "classic, consumer" in err
    assert admin.calls == []


def test_describe_shows_the_type(admin: FakeGroupAdmin) -> None:
    assert json.loads(ok("groups", "describe", "librdkafka-app", "--output", "json"))["type"] == "CLASSIC"
    assert json.loads(ok("groups", "describe", "sdk-app", "--output", "json"))["type"] == "CONSUMER"
    assert "Type: CLASSIC" in ok("groups", "describe", "librdkafka-app")
