"""``weir-dump-log`` (log_formats.dump_log_command), the server-side tool that prints and verifies
a broker's segment files, run in-process on files written in tmp_path (no broker)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from log_formats.dump_log_command import main
from log_formats.log_files import segment_file_name
from weir.cli import main as sdk_main
from weir.records import CRC_OFFSET, RecordBatchBuilder


def run(argv: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(argv, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def write_log(directory: Path, batch_count: int) -> Path:
    batches = []
    for number in range(batch_count):
        builder = RecordBatchBuilder(base_offset=number * 2)
        builder.append(1_700_000_000_000, b"key", f"value-{number}-a".encode())
        builder.append(1_700_000_000_001, None, f"value-{number}-b".encode())
        batches.append(builder.build())
    path = directory / segment_file_name(0, ".log")
    path.write_bytes(b"".join(batches))
    return path


def test_dump_log_prints_batches_and_records_and_exits_zero(tmp_path: Path) -> None:
    log = write_log(tmp_path, 2)

    code, out, err = run([str(log), "--print-data-log"])

    assert (code, err) == (0, "")
    assert out.count("baseOffset:") == 2
    assert "| offset: 3 CreateTime: 1700000000001 keySize: -1 valueSize: 9" in out
    assert "payload: value-1-b" in out


def test_dump_log_of_corrupt_log_exits_one_with_one_line_error(tmp_path: Path) -> None:
    log = write_log(tmp_path, 2)
    data = bytearray(log.read_bytes())
    data[CRC_OFFSET] ^= 0x01
    log.write_bytes(bytes(data))

    code, out, err = run([str(tmp_path)])

    assert code == 1
    assert "PROBLEM:" in out
    assert err.count("\n") == 1
    assert err.startswith("weir: error: 1 problem(s) found; the first:") and "CRC mismatch" in err


def test_dump_log_of_missing_path_exits_one(tmp_path: Path) -> None:
    code, out, err = run([str(tmp_path / "nothing.log")])

    assert (code, out) == (1, "")
    assert err == f"weir: error: {tmp_path / 'nothing.log'}: no such file or directory\n"


def test_dump_log_with_progress_keeps_bar_off_stdout(tmp_path: Path) -> None:
    log = write_log(tmp_path, 3)
    plain_code, plain_out, _ = run([str(log)])

    code, out, err = run([str(log), "--progress"])

    assert code == plain_code == 0
    assert out == plain_out
    assert "reading log files" in err


def test_dump_log_without_a_path_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run([])

    assert (code, out) == (2, "")
    assert "the following arguments are required: PATH" in err


def test_the_sdk_cli_has_no_dump_log_command(tmp_path: Path) -> None:
    # The SDK installs alone: its `weir` CLI never reads broker files (tests/test_sdk_distribution.py).
    log = write_log(tmp_path, 1)
    stdout, stderr = io.StringIO(), io.StringIO()

    code = sdk_main(["dump-log", str(log)], stdin=io.BytesIO(b""), stdout=stdout, stderr=stderr, environ={})

    assert (code, stdout.getvalue()) == (2, "")
    assert "invalid choice: 'dump-log'" in stderr.getvalue()


def test_module_runs_as_a_program(tmp_path: Path) -> None:
    log = write_log(tmp_path, 1)

    completed = subprocess.run([sys.executable, "-m", "log_formats.dump_log_command", str(log)], capture_output=True, text=True, timeout=60, check=False)

    assert (completed.returncode, completed.stderr) == (0, "")
    assert completed.stdout.count("baseOffset:") == 1
