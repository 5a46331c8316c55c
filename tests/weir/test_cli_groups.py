"""`weir groups ...` in-process: against an in-memory admin (every state and refusal, at
once) and, at the end, against a real broker with a real consumer group."""

from __future__ import annotations

import io
import json
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from tests.support.group_broker import GROUP_BROKER_CONFIGS, join_and_commit, produce
from tests.support.processes import BrokerProcess
from weir.cli import connection, main

FIRST_TIMESTAMP_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> FakeGroupAdmin:
    """The fake every `weir groups` command of the test talks to: topic orders has partitions
    ending at 10 and 20; group busy has two members, group idle none; both have lag."""
    fake = FakeGroupAdmin()
    fake.add_topic("orders", [10, 20], first_timestamp_ms=FIRST_TIMESTAMP_MS)
    fake.add_topic("payments", [5])
    fake.add_group(
        "busy",
        {("orders", 0): 4, ("orders", 1): 20},
        [
            FakeMember("member-a", "client-a", [("orders", 0)], instance_id="app-1"),
            FakeMember("member-b", "client-b", [("orders", 1)], target=[("orders", 1), ("payments", 0)]),
        ],
        assignor="sticky",
    )
    fake.add_group("idle", {("orders", 0): 7})
    monkeypatch.setattr(connection, "admin_client", lambda args, environ: closing(fake))
    return fake


def weir(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr, environ={})
    return code, stdout.getvalue(), stderr.getvalue()


def ok(*argv: str) -> str:
    code, out, err = weir(*argv)
    assert code == 0, f"weir {' '.join(argv)} exited {code}: {err}"
    return out


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 1
    assert err.startswith("weir: error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err


# ------------------------------------------------------------------ list and describe


def test_list_shows_each_group_with_its_state(admin: FakeGroupAdmin) -> None:
    table = ok("groups", "list")
    listed = json.loads(ok("groups", "list", "--output", "json"))

    assert listed == [
        {"group_id": "busy", "state": "STABLE", "type": "CONSUMER", "is_simple": False},
        {"group_id": "idle", "state": "EMPTY", "type": "CONSUMER", "is_simple": True},
    ]
    assert "Group" in table and "State" in table and "busy" in table and "STABLE" in table


def test_list_filters_by_state_in_kafka_or_enum_spelling(admin: FakeGroupAdmin) -> None:
    assert [group["group_id"] for group in json.loads(ok("groups", "list", "--state", "Empty", "--output", "json"))] == ["idle"]
    assert [group["group_id"] for group in json.loads(ok("groups", "list", "--state", "stable,EMPTY", "--output", "json"))] == ["busy", "idle"]


def test_list_with_unknown_state_is_a_usage_error(admin: FakeGroupAdmin) -> None:
    code, _, err = weir("groups", "list", "--state", "Sleeping")

    assert code == 2 and "unknown group state 'Sleeping'" in err and "RECONCILING" in err
    assert admin.calls == []


def test_describe_shows_state_assignor_coordinator_and_members(admin: FakeGroupAdmin) -> None:
    table = ok("groups", "describe", "busy")
    described = json.loads(ok("groups", "describe", "busy", "--output", "json"))

    assert "Group: busy  State: STABLE  Assignor: sticky  Coordinator: 1 (127.0.0.1:9092)  Members: 2" in table
    assert "member-a" in table and "app-1" in table and "client-b" in table and "orders:0" in table
    assert "orders:1; payments:0" in table  # member-b's target, while it moves there
    assert described["coordinator"] == {"id": 1, "host": "127.0.0.1", "port": 9092}
    assert described["members"][0] == {
        "member_id": "member-a",
        "group_instance_id": "app-1",
        "client_id": "client-a",
        "host": "/127.0.0.1",
        "assignment": [{"topic": "orders", "partition": 0}],
        "target_assignment": [{"topic": "orders", "partition": 0}],
    }


def test_describe_of_group_without_members_says_so(admin: FakeGroupAdmin) -> None:
    assert "The group has no active members." in ok("groups", "describe", "idle")


def test_describe_unknown_group_fails_with_one_line(admin: FakeGroupAdmin) -> None:
    assert_one_line_error(*weir("groups", "describe", "nobody")[::2], "group 'nobody' does not exist")


# ------------------------------------------------------------------ lag


def test_lag_shows_committed_end_and_lag_per_partition_with_owner_and_total(admin: FakeGroupAdmin) -> None:
    table = ok("groups", "lag", "busy")
    report = json.loads(ok("groups", "lag", "busy", "--output", "json"))

    assert report["total_lag"] == 6
    assert report["partitions"] == [
        {"topic": "orders", "partition": 0, "committed_offset": 4, "end_offset": 10, "lag": 6, "member_id": "member-a", "client_id": "client-a"},
        {"topic": "orders", "partition": 1, "committed_offset": 20, "end_offset": 20, "lag": 0, "member_id": "member-b", "client_id": "client-b"},
        # member-b's target: nobody owns it yet and nothing is committed there.
        {"topic": "payments", "partition": 0, "committed_offset": None, "end_offset": 5, "lag": None, "member_id": None, "client_id": None},
    ]
    assert "Committed offset" in table and "Total lag: 6 over 3 partitions (1 without a committed offset)." in table


def test_lag_of_a_partition_whose_leader_does_not_answer_is_unknown(admin: FakeGroupAdmin) -> None:
    admin.groups["idle"].offsets[("gone", 0)] = 3  # committed on a topic the brokers no longer have

    report = json.loads(ok("groups", "lag", "idle", "--output", "json"))
    table = ok("groups", "lag", "idle")

    assert {"topic": "gone", "partition": 0, "committed_offset": 3, "end_offset": None, "lag": None, "member_id": None, "client_id": None} in report[
        "partitions"
    ]
    assert report["total_lag"] == 3
    assert "Total lag: 3 over 2 partitions (1 whose end offset is unknown: no leader answered)." in table


def test_lag_of_unknown_group_fails_with_one_line(admin: FakeGroupAdmin) -> None:
    assert_one_line_error(*weir("groups", "lag", "nobody")[::2], "group 'nobody' does not exist")


# ------------------------------------------------------------------ reset-offsets


def test_reset_without_execute_prints_the_plan_and_changes_nothing(admin: FakeGroupAdmin) -> None:
    out = ok("groups", "reset-offsets", "idle", "--topic", "orders", "--to-latest")
    plan = json.loads(ok("groups", "reset-offsets", "idle", "--topic", "orders", "--to-earliest", "--output", "json"))

    assert "Current offset" in out and "New offset" in out and "Dry run: nothing was changed" in out
    assert plan == {
        "group_id": "idle",
        "executed": False,
        "changes": [
            {"topic": "orders", "partition": 0, "current_offset": 7, "new_offset": 0},
            {"topic": "orders", "partition": 1, "current_offset": None, "new_offset": 0},
        ],
    }
    assert admin.groups["idle"].offsets == {("orders", 0): 7}
    assert "alter_consumer_group_offsets" not in admin.calls


def test_reset_with_execute_applies_the_plan(admin: FakeGroupAdmin) -> None:
    out = ok("groups", "reset-offsets", "idle", "--topic", "orders", "--to-latest", "--execute")

    assert "Reset the offsets of group idle on 2 partitions." in out
    assert admin.groups["idle"].offsets == {("orders", 0): 10, ("orders", 1): 20}


def test_reset_to_datetime_finds_the_first_offset_at_or_after_it(admin: FakeGroupAdmin) -> None:
    plan = json.loads(ok("groups", "reset-offsets", "idle", "--topic", "orders", "--to-datetime", "2023-11-14T22:13:23Z", "--output", "json"))

    assert [change["new_offset"] for change in plan["changes"]] == [3, 3]


def test_reset_to_offset_sets_every_partition_of_the_topics(admin: FakeGroupAdmin) -> None:
    ok("groups", "reset-offsets", "idle", "--topic", "orders", "--topic", "payments", "--to-offset", "2", "--execute")

    assert admin.groups["idle"].offsets == {("orders", 0): 2, ("orders", 1): 2, ("payments", 0): 2}


def test_reset_from_file_applies_its_offsets(admin: FakeGroupAdmin, tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("# topic,partition,offset\norders,1,12\n\npayments,0,3\n")

    ok("groups", "reset-offsets", "idle", "--from-file", str(plan), "--execute")

    assert admin.groups["idle"].offsets == {("orders", 0): 7, ("orders", 1): 12, ("payments", 0): 3}


def test_reset_from_file_with_a_bad_line_names_it(admin: FakeGroupAdmin, tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,1,12\norders,one,3\n")

    code, _, err = weir("groups", "reset-offsets", "idle", "--from-file", str(plan))

    assert code == 2 and "line 2 of" in err and "orders,one,3" in err
    assert "alter_consumer_group_offsets" not in admin.calls


def test_reset_of_an_active_group_fails_naming_its_members_and_changes_nothing(admin: FakeGroupAdmin) -> None:
    code, _, err = weir("groups", "reset-offsets", "busy", "--topic", "orders", "--to-earliest", "--execute")

    assert_one_line_error(code, err, "group 'busy' has 2 active members", "nothing was changed")
    assert admin.groups["busy"].offsets == {("orders", 0): 4, ("orders", 1): 20}
    assert "alter_consumer_group_offsets" not in admin.calls


def test_dry_run_on_an_active_group_warns_that_execute_would_be_refused(admin: FakeGroupAdmin) -> None:
    code, out, err = weir("groups", "reset-offsets", "busy", "--topic", "orders", "--to-earliest")

    assert code == 0 and "Dry run" in out
    assert "has 2 active members; --execute is refused until they stop" in err


def test_reset_of_a_new_group_creates_its_offsets(admin: FakeGroupAdmin) -> None:
    ok("groups", "reset-offsets", "fresh", "--topic", "payments", "--to-earliest", "--execute")

    assert admin.groups["fresh"].offsets == {("payments", 0): 0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--to-earliest"], "give the topics to reset with --topic"),
        (["--topic", "orders", "--from-file", "x.csv"], "do not give --topic with it"),
        (["--topic", "orders", "--to-datetime", "yesterday"], "ISO 8601"),
        (["--topic", "orders", "--to-datetime", "1960-01-01T00:00:00Z"], "before 1970"),
        (["--topic", "orders", "--from-file", "x.csv", "--to-latest"], "not allowed with argument"),
        (["--topic", "orders"], "one of the arguments"),
    ],
)
def test_reset_with_bad_options_is_a_usage_error(admin: FakeGroupAdmin, argv: list[str], message: str) -> None:
    code, _, err = weir("groups", "reset-offsets", "idle", *argv)

    assert code == 2 and message in err
    assert "alter_consumer_group_offsets" not in admin.calls


def test_reset_of_unknown_topic_fails_with_one_line(admin: FakeGroupAdmin) -> None:
    assert_one_line_error(*weir("groups", "reset-offsets", "idle", "--topic", "nope", "--to-offset", "1")[::2], "'nope' does not exist")


# ------------------------------------------------------------------ delete and errors


def test_delete_removes_an_empty_group(admin: FakeGroupAdmin) -> None:
    assert ok("groups", "delete", "idle") == "Deleted group idle.\n"
    assert "idle" not in admin.groups


def test_delete_of_an_active_group_names_its_members(admin: FakeGroupAdmin) -> None:
    assert_one_line_error(*weir("groups", "delete", "busy")[::2], "group 'busy' has 2 active members", "before deleting the group")
    assert "busy" in admin.groups


def test_delete_of_unknown_group_fails_with_one_line(admin: FakeGroupAdmin) -> None:
    assert_one_line_error(*weir("groups", "delete", "nobody")[::2], "group 'nobody' does not exist")


def test_unreachable_brokers_fail_with_one_line(admin: FakeGroupAdmin) -> None:
    admin.unreachable = True

    for argv in (["list"], ["describe", "busy"], ["lag", "busy"], ["delete", "idle"], ["reset-offsets", "idle", "--topic", "orders", "--to-latest"]):
        assert_one_line_error(*weir("groups", *argv, "--bootstrap-server", "127.0.0.1:9092")[::2], "cannot reach a broker at 127.0.0.1:9092")


# ------------------------------------------------------------------ end to end


def test_group_tooling_against_a_real_broker_and_consumer(tmp_path: Path) -> None:
    """A subscribed consumer commits 6+4 records; 3 more arrive. List, describe and lag show
    it; resetting while it runs is refused; once it left, reset and delete work."""
    broker = BrokerProcess(tmp_path / "broker", configs=GROUP_BROKER_CONFIGS).start()
    config = {"bootstrap.servers": broker.address}

    def run(*argv: str) -> tuple[int, str, str]:
        return weir(*argv, "--bootstrap-server", broker.address, "--request-timeout-ms", "10000")

    def run_ok(*argv: str) -> str:
        code, out, err = run(*argv)
        assert code == 0, f"weir {' '.join(argv)} exited {code}: {err}"
        return out

    try:
        run_ok("topics", "create", "orders", "--partitions", "2")
        produce(config, "orders", {0: 6, 1: 4})
        consumer = join_and_commit(config, "orders", "billing", records=10)
        try:
            produce(config, "orders", {0: 3})

            listed = json.loads(run_ok("groups", "list", "--output", "json"))
            assert listed == [{"group_id": "billing", "state": "STABLE", "type": "CONSUMER", "is_simple": False}]
            described = json.loads(run_ok("groups", "describe", "billing", "--output", "json"))
            [member] = described["members"]
            assert member["client_id"] == "billing-client"
            assert member["assignment"] == [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]
            assert described["coordinator"]["port"] == broker.port
            lag = json.loads(run_ok("groups", "lag", "billing", "--output", "json"))
            assert [(row["partition"], row["committed_offset"], row["end_offset"], row["lag"]) for row in lag["partitions"]] == [(0, 6, 9, 3), (1, 4, 4, 0)]
            assert lag["total_lag"] == 3 and lag["partitions"][0]["member_id"] == member["member_id"]

            code, _, err = run("groups", "reset-offsets", "billing", "--topic", "orders", "--to-earliest", "--execute")
            assert_one_line_error(code, err, "group 'billing' has 1 active member")
        finally:
            consumer.close()

        plan = json.loads(run_ok("groups", "reset-offsets", "billing", "--topic", "orders", "--to-earliest", "--execute", "--output", "json"))
        assert [(change["partition"], change["current_offset"], change["new_offset"]) for change in plan["changes"]] == [(0, 6, 0), (1, 4, 0)]
        assert json.loads(run_ok("groups", "lag", "billing", "--output", "json"))["total_lag"] == 13
        assert run_ok("groups", "delete", "billing") == "Deleted group billing.\n"
        assert json.loads(run_ok("groups", "list", "--output", "json")) == []
    finally:
        broker.stop()
