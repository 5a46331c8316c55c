"""The allocator settings the broker and the benchmarks apply to themselves and their children."""

from __future__ import annotations

import ctypes.util
import os

import pytest

from server_runtime.malloc_tuning import MALLOC_ENVIRONMENT, tune_this_process, tuned_environment


def test_tuned_environment_adds_both_thresholds_and_keeps_the_operators_values():
    environment = tuned_environment({"MALLOC_MMAP_THRESHOLD_": "4096", "PATH": "/bin"})
    assert environment["MALLOC_MMAP_THRESHOLD_"] == "4096"
    assert environment["MALLOC_TRIM_THRESHOLD_"] == MALLOC_ENVIRONMENT["MALLOC_TRIM_THRESHOLD_"]
    assert environment["PATH"] == "/bin"


@pytest.mark.skipif(ctypes.util.find_library("c") is None, reason="no C library to tune")
def test_tuning_this_process_applies_and_exports_the_operators_values(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "262144")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "262144")
    assert tune_this_process() is True
    assert os.environ["MALLOC_MMAP_THRESHOLD_"] == "262144"
