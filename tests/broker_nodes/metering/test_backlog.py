import logging

import pytest

from broker_nodes.metering.backlog import PendingWindow, UsageBacklog, unpack_rows, window_file_name
from log_formats.usage_records import TrafficRow, decode, encode, encode_json


def window(sequence: int, rows: int = 2, incarnation: str = "aa11") -> PendingWindow:
    start = 1_700_000_000_000 + sequence * 1000
    values = tuple(encode(TrafficRow(1, incarnation, sequence, start, start + 1000, "tn-a", "orders", partition, bytes_in=10)) for partition in range(rows))
    return PendingWindow(incarnation, sequence, start, start + 1000, values)


def acknowledge_all(backlog: UsageBacklog, pending: PendingWindow) -> None:
    for index in range(len(pending.values)):
        backlog.start_sending(pending, index)
        backlog.acknowledge(pending, index)


def test_a_window_is_on_disk_until_every_row_is_acknowledged(tmp_path):
    backlog = UsageBacklog(tmp_path / "metering", max_rows=100)
    pending = window(0, rows=2)
    backlog.add(pending)
    path = tmp_path / "metering" / window_file_name(pending.end_ms, "aa11", 0)
    assert unpack_rows(path.read_bytes()) == pending.values
    backlog.start_sending(pending, 0)
    backlog.acknowledge(pending, 0)
    assert path.exists() and backlog.windows == [pending]
    backlog.start_sending(pending, 1)
    backlog.acknowledge(pending, 1)
    assert not path.exists() and backlog.windows == [] and backlog.rows == 0


def test_a_failed_row_becomes_unsent_again(tmp_path):
    backlog = UsageBacklog(tmp_path, max_rows=100)
    pending = window(0, rows=2)
    backlog.add(pending)
    backlog.start_sending(pending, 0)
    backlog.start_sending(pending, 1)
    assert not backlog.has_unsent() and backlog.in_flight_rows == 2
    backlog.failed(pending, 1)
    assert [(item, index) for item, index in backlog.unsent_rows()] == [(pending, 1)]
    assert backlog.unacknowledged_rows == 2


def test_beyond_the_bound_the_oldest_windows_are_dropped_with_a_warning_naming_the_rows_lost(tmp_path, caplog):
    backlog = UsageBacklog(tmp_path, max_rows=5)
    first, second, third = window(0, rows=2), window(1, rows=2), window(2, rows=2)
    backlog.add(first)
    backlog.add(second)
    backlog.start_sending(first, 0)
    backlog.acknowledge(first, 0)  # one row of the first window is safe: 1 row of it is lost
    with caplog.at_level(logging.WARNING, logger="broker_nodes.metering.backlog"):
        backlog.add(third)
    assert backlog.windows == [second, third]
    assert not first.path.exists()  # type: ignore[union-attr]
    [message] = [record.getMessage() for record in caplog.records]
    assert "dropped 1 usage rows" in message and "of 1 windows" in message and "metering.backlog.max.rows=5" in message


def test_the_newest_window_is_kept_even_when_it_alone_exceeds_the_bound(tmp_path):
    backlog = UsageBacklog(tmp_path, max_rows=1)
    backlog.add(window(0, rows=1))
    big = window(1, rows=3)
    backlog.add(big)
    assert backlog.windows == [big]


def test_a_new_backlog_takes_up_the_windows_left_on_disk_oldest_first(tmp_path):
    directory = tmp_path / "metering"
    before = UsageBacklog(directory, max_rows=100)
    kept = [window(2, incarnation="bb22"), window(1, incarnation="aa11")]
    for pending in kept:
        before.add(pending)
    acknowledge_all(before, before.windows[0])  # sequence 2 of bb22 was acknowledged
    (directory / "leftover.usage.tmp").write_bytes(b"half a window")
    after = UsageBacklog(directory, max_rows=100)
    assert after.load() == 2
    [loaded] = after.windows
    assert (loaded.incarnation, loaded.sequence, loaded.values) == ("aa11", 1, kept[1].values)
    assert loaded.unsent == {0, 1}
    assert not (directory / "leftover.usage.tmp").exists()


def test_an_unreadable_window_file_is_removed_with_a_warning(tmp_path, caplog):
    directory = tmp_path / "metering"
    directory.mkdir()
    (directory / window_file_name(5, "cc33", 0)).write_bytes(b'{"schema":"weir.usage/9"}\n')
    backlog = UsageBacklog(directory, max_rows=100)
    with caplog.at_level(logging.WARNING, logger="broker_nodes.metering.backlog"):
        assert backlog.load() == 0
    assert list(directory.iterdir()) == []
    assert "unreadable" in caplog.text and "weir.usage/9" in caplog.text


def test_without_a_directory_windows_are_kept_in_memory_only(tmp_path):
    backlog = UsageBacklog(None, max_rows=10)
    pending = window(0)
    backlog.add(pending)
    assert pending.path is None and backlog.load() == 0
    acknowledge_all(backlog, pending)
    assert backlog.windows == []


def test_the_bound_must_be_at_least_one_row():
    with pytest.raises(ValueError, match="at least one row"):
        UsageBacklog(None, max_rows=0)


def test_binary_rows_holding_newline_bytes_come_back_whole_after_a_restart(tmp_path):
    start = 1_700_000_000_000
    # 10 is a newline byte in the binary encoding: a line-based file would split the row.
    row = TrafficRow(10, "aa11", 10, start, start + 1000, "tn-a", "orders", 10, bytes_in=10, records_in=2570)
    assert b"\n" in encode(row)
    backlog = UsageBacklog(tmp_path, max_rows=100)
    backlog.add(PendingWindow("aa11", 10, start, start + 1000, (encode(row), encode(row))))
    restarted = UsageBacklog(tmp_path, max_rows=100)
    assert restarted.load() == 2
    [loaded] = restarted.windows
    assert [decode(value) for value in loaded.values] == [row, row]


def test_a_backlog_file_of_json_lines_left_by_an_earlier_version_is_sent_again_as_it_was(tmp_path):
    start = 1_700_000_000_000
    values = [encode_json(TrafficRow(1, "old1", 4, start, start + 1000, "tn-a", "orders", partition, bytes_in=7)) for partition in range(3)]
    (tmp_path / window_file_name(start + 1000, "old1", 4)).write_bytes(b"\n".join(values) + b"\n")
    backlog = UsageBacklog(tmp_path, max_rows=100)
    assert backlog.load() == 3
    [loaded] = backlog.windows
    assert list(loaded.values) == values and (loaded.incarnation, loaded.sequence) == ("old1", 4)


def test_a_torn_backlog_file_is_removed_with_a_warning(tmp_path, caplog):
    start = 1_700_000_000_000
    value = encode(TrafficRow(1, "aa11", 0, start, start + 1000, "tn-a", "orders", 0))
    path = tmp_path / window_file_name(start + 1000, "aa11", 0)
    path.write_bytes(len(value).to_bytes(4, "big") + value[:-3])
    with caplog.at_level(logging.WARNING, logger="broker_nodes.metering.backlog"):
        assert UsageBacklog(tmp_path, max_rows=100).load() == 0
    assert not path.exists()
    assert "runs past the end of the file" in caplog.text
