"""No process outlives its parent: start children that end when this process ends, however it ends.

A supervisor that is killed with SIGKILL runs no cleanup, so its children (and their own
children: gunicorn's workers, Celery's pool, Spark's JVM) would live on holding ports and data
directories. :func:`spawn` is ``subprocess.Popen`` with two independent safety nets:

1. **Parent-death signal.** The child is started with Linux's ``PR_SET_PDEATHSIG``, so the
   kernel sends it ``death_signal`` the moment this process dies. It is set by this file run
   as a tiny exec shim (``python -I -S lifeline.py --exec ...``: prctl, then exec the command,
   keeping the process id), not in a ``preexec_fn``: that would make Python fork() instead of
   vfork() and run gRPC's fork handlers, which abort the child now and then in a process with
   busy gRPC threads (seen as brokers dying of SIGABRT at start). Linux ties that signal to
   the *thread* that forked the child, not the process, so :func:`spawn` forks from the main
   thread, or from one long-lived spawner thread when called elsewhere (a thread pool that
   starts brokers and then ends must not take them with it). The signal reaches only the
   direct child, not what that child starts.
2. **A guardian.** The first :func:`spawn` in a process starts a tiny guardian process (this
   file run as a script, standard library only) that reads this process's registrations on a
   pipe. Every child starts a new session, so its process group holds everything it starts
   that does not leave the group (gunicorn's workers, Celery's pool children, pyspark's JVM).
   When the pipe reaches end of file (this process is gone, whatever killed it), the guardian
   sends SIGTERM to each registered group that still has a member, SIGKILL after
   ``GUARDIAN_GRACE_SECONDS``, and exits. A child that starts a new session of its own must
   use :func:`spawn` itself, which makes that level robust the same way.

So a ``kill -9`` of ``make up``'s supervisor, of a Celery worker running a pipeline, or of
pytest ends the whole tree within ``GUARDIAN_GRACE_SECONDS`` plus a poll. Off Linux the
parent-death signal is skipped and the guardian alone does the job.

This module imports only the standard library: the brokers, the control plane, ``make up``, the
benchmarks and the test fixtures all use it, and the guardian runs it with ``python -I -S``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

# prctl(2) option from <linux/prctl.h>: deliver a signal to this process when its parent dies.
PR_SET_PDEATHSIG = 1
# After SIGTERM, how long the guardian lets a group stop gracefully before SIGKILL.
GUARDIAN_GRACE_SECONDS = 5.0
# How often the guardian forgets groups that have ended (so a recycled group id is never signalled)
# and, once its parent is gone, checks whether the groups it signalled are empty.
GUARDIAN_POLL_SECONDS = 0.5


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


# Looked up once, before any fork: the child calls it between fork and exec.
_prctl = _load_prctl()


def set_parent_death_signal(death_signal: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``death_signal`` to this process when the thread that started it
    ends. For processes that fork workers of their own (a gunicorn worker, a Celery pool child);
    False where the platform has no such thing."""
    if _prctl is None:
        return False
    return _prctl(PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0) == 0


def _exec_with_parent_death_signal(death_signal: int, parent_pid: int, command: list[str]) -> None:
    """The shim: set the parent-death signal, then become ``command`` (same process id)."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
        # The parent may have died before the call: then no signal would ever come.
        if os.getppid() != parent_pid:
            os._exit(1)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"server_runtime.lifeline: cannot run {command[0]}: {error}", file=sys.stderr)
        os._exit(127)


class _Guardian:
    """This process's guardian and the pipe that registers process groups with it."""

    def __init__(self) -> None:
        self.owner_pid = os.getpid()
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its own session: a Ctrl-C or a killpg aimed at this process's group must not end
            # the one process that cleans up after it.
            start_new_session=True,
            close_fds=True,
        )
        assert self.process.stdin is not None
        self._pipe = self.process.stdin
        self._lock = threading.Lock()

    def watch(self, group_id: int) -> None:
        with self._lock:
            self._pipe.write(f"+{group_id}\n".encode())
            self._pipe.flush()


_guardian: _Guardian | None = None
_guardian_lock = threading.Lock()


def _this_process_guardian() -> _Guardian:
    global _guardian
    with _guardian_lock:
        if _guardian is None or _guardian.owner_pid != os.getpid() or _guardian.process.poll() is not None:
            _guardian = _Guardian()
        return _guardian


def _forget_guardian_after_fork() -> None:
    """A forked child (a Celery pool process) must not hold its parent's registration pipe open:
    the guardian would then wait for the child too. It starts its own guardian when it spawns."""
    global _guardian, _guardian_lock
    _guardian_lock = threading.Lock()
    if _guardian is not None and _guardian.owner_pid != os.getpid():
        try:
            _guardian._pipe.close()
        except (OSError, ValueError):
            pass
        _guardian = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_guardian_after_fork)


class _SpawnerThread:
    """One thread that lives as long as the process and forks the children of other threads
    (see the module docstring: the parent-death signal follows the forking thread)."""

    def __init__(self) -> None:
        self.owner_pid = os.getpid()
        self.requests: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[Any]], Future[subprocess.Popen[Any]]]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="server_runtime.lifeline spawner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            start, future = self.requests.get()
            try:
                future.set_result(start())
            except BaseException as error:  # handed to the caller, who raises it
                future.set_exception(error)

    def run(self, start: Callable[[], subprocess.Popen[Any]]) -> subprocess.Popen[Any]:
        future: Future[subprocess.Popen[Any]] = Future()
        self.requests.put((start, future))
        return future.result()


_spawner: _SpawnerThread | None = None


def _this_process_spawner() -> _SpawnerThread:
    global _spawner
    with _guardian_lock:
        if _spawner is None or _spawner.owner_pid != os.getpid():
            _spawner = _SpawnerThread()
        return _spawner


def spawn(command: Sequence[str], *, death_signal: int = signal.SIGTERM, **popen_arguments: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(command, **popen_arguments)`` in a new session, ended when this
    process ends: the child gets ``death_signal`` from the kernel, and this process's guardian
    signals the child's whole process group (SIGTERM, then SIGKILL). See the module docstring.

    ``start_new_session`` is always true: the group is what the guardian ends, and what
    :func:`signal_group` signals. FileNotFoundError, as from Popen, when the program is not found.
    """
    if popen_arguments.pop("start_new_session", True) is not True:
        raise ValueError("spawn always starts a new session: its process group is what ends with this process")
    if "preexec_fn" in popen_arguments:
        raise ValueError("spawn takes no preexec_fn: it would make Python fork() and run gRPC's fork handlers (see the module docstring)")
    command = list(command)
    environment = popen_arguments.get("env")
    search_path = environment.get("PATH") if environment is not None else None
    if shutil.which(command[0], path=search_path) is None and shutil.which(command[0]) is None:
        raise FileNotFoundError(2, "No such file or directory", command[0])
    guardian = _this_process_guardian()
    if _prctl is not None:
        command = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--exec", str(int(death_signal)), str(os.getpid()), "--", *command]

    def start() -> subprocess.Popen[Any]:
        return subprocess.Popen(command, start_new_session=True, **popen_arguments)

    if threading.current_thread() is threading.main_thread():
        process = start()
    else:
        process = _this_process_spawner().run(start)
    guardian.watch(process.pid)
    return process


def signal_group(process: subprocess.Popen[Any], signal_number: int) -> None:
    """Send ``signal_number`` to the process group of a child started by :func:`spawn` (the child
    and whatever it started in its group); nothing when the group is gone."""
    try:
        os.killpg(process.pid, signal_number)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(group_id: int) -> bool:
    """Whether any process (a zombie included) is still in process group ``group_id``."""
    try:
        os.killpg(group_id, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------- the guardian process


def _read_registrations(fd: int, groups: set[int], buffer: bytearray) -> bool:
    """Read what is available on the registration pipe into ``groups``; False at end of file."""
    chunk = os.read(fd, 65536)
    if not chunk:
        return False
    buffer.extend(chunk)
    *lines, rest = bytes(buffer).split(b"\n")
    buffer[:] = rest
    for line in lines:
        text = line.decode("ascii", errors="replace").strip()
        if text.startswith("+") and text[1:].isdigit() and int(text[1:]) > 1:
            groups.add(int(text[1:]))
    return True


def _end_groups(groups: set[int]) -> None:
    """SIGTERM every group with a member, then SIGKILL what is left after the grace period."""
    for group_id in groups:
        try:
            os.killpg(group_id, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + GUARDIAN_GRACE_SECONDS
    while time.monotonic() < deadline and any(group_alive(group_id) for group_id in groups):
        time.sleep(GUARDIAN_POLL_SECONDS / 5)
    for group_id in groups:
        try:
            os.killpg(group_id, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def guard(fd: int = 0) -> None:
    """The guardian's loop: collect the process groups registered on ``fd``; forget those that
    have ended; when ``fd`` reaches end of file (the parent is gone), end the rest."""
    for signal_number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        # Only the end of the pipe ends the guardian: it must outlive its parent to clean up.
        signal.signal(signal_number, signal.SIG_IGN)
    groups: set[int] = set()
    buffer = bytearray()
    while True:
        readable, _, _ = select.select([fd], [], [], GUARDIAN_POLL_SECONDS)
        if readable and not _read_registrations(fd, groups, buffer):
            break
        groups = {group_id for group_id in groups if group_alive(group_id)}
    _end_groups({group_id for group_id in groups if group_alive(group_id)})


if __name__ == "__main__":
    if sys.argv[1:2] == ["--exec"]:
        _exec_with_parent_death_signal(int(sys.argv[2]), int(sys.argv[3]), sys.argv[5:])
    else:
        guard()
