from pathlib import Path

import pytest

from bench.__main__ import build_parser, settings_from


def parse(*arguments: str):
    return settings_from(build_parser().parse_args(list(arguments)))


def test_records_scale_down_for_larger_records_to_move_the_same_bytes() -> None:
    settings = parse("produce")
    assert settings.records_for(100) == 1_000_000
    assert settings.records_for(1024) == 98_000


def test_quick_mode_shrinks_defaults_but_not_explicit_values() -> None:
    settings = parse("all", "--quick", "--runs", "2")
    assert settings.records == 20_000
    assert settings.runs == 2
    assert settings.e2e_seconds == 1.0
    assert settings.scenarios == ("produce", "consume", "e2e")


def test_peers_none_selects_no_peer() -> None:
    assert parse("consume", "--peers", "none").peers == ()


def test_unknown_peer_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse("produce", "--peers", "kafka")


def test_profile_directory_is_a_path() -> None:
    assert parse("produce", "--profile", "/tmp/p").profile_directory == Path("/tmp/p")


def test_replicated_e2e_row_is_on_unless_left_out() -> None:
    assert parse("e2e").replicated_e2e is True
    assert parse("e2e", "--no-replicated-e2e").replicated_e2e is False
