"""Data directories are 0700 and their files 0600, whatever umask a process starts with: a
real broker's partition directories and segments, and the control plane's database, secrets
and static directory made by ``manage.py`` and by the WSGI application under gunicorn."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.processes import BrokerProcess, free_port
from weir.admin import AdminClient, NewTopic
from weir.producer import Producer

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
# Started with the loosest umask, so that only Weir's own measures can make the files private.
LOOSE_UMASK = 0o000
START_SECONDS = 60.0


def _modes(root: Path) -> dict[str, int]:
    """Every entry under ``root`` (root included): relative path -> permission bits."""
    modes = {".": stat.S_IMODE(root.lstat().st_mode)}
    for path in root.rglob("*"):
        if not path.is_symlink():
            modes[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return modes


def _assert_private(root: Path) -> None:
    modes = _modes(root)
    for name, mode in modes.items():
        path = root / name
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{path} is {oct(mode)}, expected {oct(expected)}"


def _loose_umask_then(command: list[str]) -> list[str]:
    """``command`` run from a shell whose umask is LOOSE_UMASK."""
    return ["sh", "-c", f'umask {LOOSE_UMASK:03o} && exec "$@"', "sh", *command]


def test_a_broker_keeps_its_directories_0700_and_files_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "broker"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)  # left open by an older version: closed at start
    (data_dir / "left-over.txt").write_text("x")
    (data_dir / "left-over.txt").chmod(0o644)
    broker = BrokerProcess(data_dir)
    broker.command = lambda: _loose_umask_then(BrokerProcess.command(broker))  # type: ignore[method-assign]
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.address})
        for future in admin.create_topics([NewTopic("private", num_partitions=2, replication_factor=1)]).values():
            future.result(timeout=30)
        producer = Producer({"bootstrap.servers": broker.address})
        for index in range(20):
            producer.produce("private", key=str(index).encode(), value=b"record")
        assert producer.flush(30) == 0
    finally:
        assert broker.stop() == 0
    partition_dirs = [path for path in data_dir.iterdir() if path.is_dir() and path.name.startswith("private-")]
    assert len(partition_dirs) == 2 and any(path.suffix == ".log" for path in partition_dirs[0].iterdir())
    _assert_private(data_dir)


def _django_environment(data_dir: Path) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DJANGO_SECRET_KEY")}
    environment.update(
        {"WEIR_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "webapp.settings", "DJANGO_DEBUG": "true", "WEIR_QUIET_TRANSPORT_NOTICE": "1"}
    )
    return environment


def test_manage_py_makes_the_database_secrets_and_queue_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "control-plane"
    data_dir.mkdir()
    data_dir.chmod(0o755)
    result = subprocess.run(
        _loose_umask_then([sys.executable, "manage.py", "migrate", "--noinput"]),
        cwd=REPOSITORY_ROOT, env=_django_environment(data_dir), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (data_dir / "control-plane.sqlite3").is_file() and (data_dir / "secrets" / "django-secret-key").is_file()
    _assert_private(data_dir)


def test_the_web_process_under_gunicorn_keeps_new_files_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "web"
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1", "webapp.wsgi"]
    process = subprocess.Popen(
        _loose_umask_then(command), cwd=REPOSITORY_ROOT, env=_django_environment(data_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + START_SECONDS
        while not (data_dir / "secrets" / "internal-token").exists():
            assert process.poll() is None, process.stderr.read().decode()[-3000:] if process.stderr else ""
            assert time.monotonic() < deadline, "the web process did not start"
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert (data_dir / "static").is_dir()
    _assert_private(data_dir)


@pytest.mark.parametrize("mode", [0o755, 0o777])
def test_restrict_directory_closes_a_directory_and_its_files(tmp_path: Path, mode: int) -> None:
    from server_runtime.private_files import restrict_directory

    directory = tmp_path / "data"
    directory.mkdir()
    (directory / "file").write_text("x")
    (directory / "file").chmod(mode & 0o666)
    directory.chmod(mode)
    restrict_directory(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and stat.S_IMODE((directory / "file").stat().st_mode) == 0o600
