from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker_nodes.storage.file_cache import FileHandleCache


def test_lease_reuses_the_open_descriptor(tmp_path: Path) -> None:
    cache = FileHandleCache(4)
    path = tmp_path / "a"
    with cache.lease(path, create=True) as first:
        os.pwrite(first, b"hello", 0)
    with cache.lease(path) as second:
        assert second == first
        assert os.pread(second, 5, 0) == b"hello"
    cache.close_all()


def test_least_recently_used_idle_descriptor_is_closed_beyond_max_open(tmp_path: Path) -> None:
    cache = FileHandleCache(2)
    for name in "abc":
        with cache.lease(tmp_path / name, create=True):
            pass
    assert cache.open_count == 2
    cache.close_all()
    assert cache.open_count == 0


def test_leased_descriptor_is_not_closed_by_eviction(tmp_path: Path) -> None:
    cache = FileHandleCache(1)
    with cache.lease(tmp_path / "held", create=True) as held:
        with cache.lease(tmp_path / "other", create=True):
            pass
        os.pwrite(held, b"still open", 0)
    assert (tmp_path / "held").read_bytes() == b"still open"
    cache.close_all()


def test_invalidate_while_leased_closes_on_release(tmp_path: Path) -> None:
    cache = FileHandleCache(4)
    path = tmp_path / "a"
    with cache.lease(path, create=True) as descriptor:
        cache.invalidate(path)
        os.fstat(descriptor)
    with pytest.raises(OSError):
        os.fstat(descriptor)


def test_lease_of_missing_file_without_create_raises(tmp_path: Path) -> None:
    cache = FileHandleCache(4)
    with pytest.raises(FileNotFoundError), cache.lease(tmp_path / "missing"):
        pass
