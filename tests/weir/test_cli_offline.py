"""The `weir` CLI where no broker is needed: option handling, early validation."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from weir.cli import build_parser, client_config, main

# Nothing listens on port 1 of the loopback: a command that contacted it would fail slowly
# with a connection error, so the tests below also prove that validation happens first.
UNREACHABLE = "127.0.0.1:1"


def run(argv: list[str], environ: dict[str, str] | None = None) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(argv, stdin=io.BytesIO(b""), stdout=stdout, stderr=stderr, environ=environ or {})
    return code, stdout.getvalue(), stderr.getvalue()


# ------------------------------------------------------------------ options


def test_bootstrap_server_after_command_overrides_the_one_before_and_the_environment() -> None:
    parser = build_parser()
    environ = {"WEIR_BOOTSTRAP_SERVERS": "env:9092"}

    before = parser.parse_args(["--bootstrap-server", "before:1", "topics", "list"])
    after = parser.parse_args(["--bootstrap-server", "before:1", "topics", "list", "--bootstrap-server", "after:2"])
    neither = parser.parse_args(["topics", "list"])

    assert client_config(before, environ)["bootstrap.servers"] == "before:1"
    assert client_config(after, environ)["bootstrap.servers"] == "after:2"
    assert client_config(neither, environ)["bootstrap.servers"] == "env:9092"
    assert client_config(neither, {})["bootstrap.servers"] == "127.0.0.1:9092"


def test_api_key_and_secret_become_sasl_credentials() -> None:
    parser = build_parser()
    from_environment = client_config(parser.parse_args(["topics", "list"]), {"WEIR_API_KEY": "KEY1", "WEIR_API_SECRET": "secret1"})
    from_flags = client_config(parser.parse_args(["topics", "list", "--api-key", "KEY2", "--api-secret", "secret2"]), {"WEIR_API_KEY": "KEY1"})

    assert (from_environment["sasl.username"], from_environment["sasl.password"]) == ("KEY1", "secret1")
    assert (from_flags["sasl.username"], from_flags["sasl.password"]) == ("KEY2", "secret2")


def test_command_config_accepts_pairs_and_properties_files(tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("# credentials\nsasl.username = FILEKEY\nclient.id=from-file\n")
    args = build_parser().parse_args(
        ["--command-config", str(properties), "topics", "list", "--command-config", "client.id=from-pair", "--command-config", "sasl.password=a=b"]
    )

    config = client_config(args, {})

    assert config["sasl.username"] == "FILEKEY"
    assert config["client.id"] == "from-pair"
    assert config["sasl.password"] == "a=b"


def test_usage_errors_exit_two() -> None:
    assert run(["topics", "create"])[0] == 2
    assert run(["produce", "orders", "--partition", "-1"])[0] == 2
    assert run(["topics", "create", "orders", "--partitions", "zero"])[0] == 2


def test_alter_without_any_change_is_a_usage_error() -> None:
    code, _, err = run(["topics", "alter", "orders", "--bootstrap-server", UNREACHABLE])

    assert code == 2
    assert "nothing to alter" in err


def test_create_with_bad_config_exits_one_before_contacting_a_broker() -> None:
    code, out, err = run(["topics", "create", "orders", "--config", "retention.ms=abc", "--bootstrap-server", UNREACHABLE])

    assert (code, out) == (1, "")
    assert err == "weir: error: invalid value 'abc' for config 'retention.ms': expected a value of type LONG\n"


def test_create_with_unknown_config_exits_one() -> None:
    code, _, err = run(["topics", "create", "orders", "--config", "retention.hours=1", "--bootstrap-server", UNREACHABLE])

    assert code == 1
    assert "'retention.hours'" in err and "unknown topic config" in err


def test_malformed_config_pair_is_a_usage_error() -> None:
    code, _, err = run(["topics", "create", "orders", "--config", "retention.ms", "--bootstrap-server", UNREACHABLE])

    assert code == 2
    assert "--config expects KEY=VALUE" in err


@pytest.mark.parametrize("argv", [["--help"], ["topics", "--help"], ["consume", "--help"]])
def test_help_exits_zero_and_prints_to_stdout(argv: list[str]) -> None:
    code, out, _ = run(argv)

    assert code == 0
    assert out.startswith("usage: weir")
