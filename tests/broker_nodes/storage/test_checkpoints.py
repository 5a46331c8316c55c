from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker_nodes.storage.checkpoints import LeaderEpochCheckpointFile, OffsetCheckpointFile
from broker_nodes.storage.errors import CorruptCheckpointError


def test_offset_checkpoint_round_trips_in_kafka_text_format(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    checkpoint.write({("orders", 1): 99, ("orders", 0): 1234, ("a-b.c", 3): 0})
    assert checkpoint.path.read_text() == "0\n3\na-b.c 3 0\norders 0 1234\norders 1 99\n"
    assert checkpoint.read() == {("orders", 1): 99, ("orders", 0): 1234, ("a-b.c", 3): 0}


def test_missing_checkpoint_reads_as_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "none").read() == {}


@pytest.mark.parametrize("content", ["", "1\n0\n", "0\n2\norders 0 5\n", "0\n1\norders zero 5\n", "0\nx\n"])
def test_malformed_checkpoint_raises(tmp_path: Path, content: str) -> None:
    path = tmp_path / "checkpoint"
    path.write_text(content)
    with pytest.raises(CorruptCheckpointError):
        OffsetCheckpointFile(path).read()


def test_failed_write_leaves_the_previous_checkpoint_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "checkpoint")
    checkpoint.write({("orders", 0): 1})

    def crash(*args: object) -> None:
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        checkpoint.write({("orders", 0): 2})
    monkeypatch.undo()
    assert checkpoint.read() == {("orders", 0): 1}


def test_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    OffsetCheckpointFile(tmp_path / "checkpoint").write({("orders", 0): 1})
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]


def test_leader_epoch_checkpoint_round_trips(tmp_path: Path) -> None:
    checkpoint = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    checkpoint.write([(0, 0), (3, 120)])
    assert checkpoint.path.read_text() == "0\n2\n0 0\n3 120\n"
    assert checkpoint.read() == [(0, 0), (3, 120)]


def test_writing_unchanged_offsets_again_leaves_the_file_alone(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "checkpoint")
    checkpoint.write({("orders", 0): 1, ("orders", 1): 7})
    first = checkpoint.path.stat().st_ino
    checkpoint.write({("orders", 1): 7, ("orders", 0): 1})
    assert checkpoint.path.stat().st_ino == first  # not replaced: each write renames a new file over it
    checkpoint.write({("orders", 0): 2, ("orders", 1): 7})
    assert checkpoint.path.stat().st_ino != first
    assert checkpoint.read() == {("orders", 0): 2, ("orders", 1): 7}
