"""Topic configs as people read them, and the topic page listing overrides first with the raw value on hover."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.dashboard.config_display import config_rows, readable_config, readable_duration, readable_size


@pytest.mark.parametrize(
    ("name", "raw", "shown"),
    [
        ("retention.ms", "604800000", "7 days"),
        ("retention.ms", "-1", "unlimited"),
        ("flush.ms", "9223372036854775807", "unlimited"),
        ("flush.messages", "9223372036854775807", "unlimited"),
        ("message.timestamp.after.max.ms", "3600000", "1 hour"),
        ("segment.jitter.ms", "0", "0 milliseconds"),
        ("delete.retention.ms", "90061001", "1 day 1 hour 1 minute 1 second 1 millisecond"),
        ("segment.bytes", "1073741824", "1 GiB"),
        ("retention.bytes", "-1", "unlimited"),
        ("max.message.bytes", "1048588", "1,048,588 bytes (1.0 MiB)"),
        ("index.interval.bytes", "4096", "4 KiB"),
        ("min.insync.replicas", "2", "2"),
        ("unclean.leader.election.enable", "false", "disabled"),
        ("min.cleanable.dirty.ratio", "0.5", "0.5 (50%)"),
        ("cleanup.policy", "compact,delete", "compact, delete"),
        ("retention.ms", "soon", "soon"),
    ],
)
def test_configs_read_as_people_say_them(name: str, raw: str, shown: str) -> None:
    assert readable_config(name, raw) == shown


def test_units_pluralise_and_sizes_below_a_kibibyte_stay_in_bytes() -> None:
    assert readable_duration(2 * 86_400_000) == "2 days"
    assert readable_size(1) == "1 byte" and readable_size(1000) == "1,000 bytes"


def test_overrides_come_first() -> None:
    rows = config_rows({"segment.ms": "3600000", "cleanup.policy": "compact"})
    assert [row.name for row in rows[:2]] == ["cleanup.policy", "segment.ms"]
    assert rows[1].shown == "1 hour" and rows[1].default_shown == "7 days" and not rows[1].is_default
    assert all(row.is_default for row in rows[2:])


def test_the_topic_page_shows_readable_values_with_the_raw_one_on_hover(owner: Member) -> None:
    do_create_topic(owner.actor, check_create_topic(owner.actor, "orders", 1, 1, {"retention.ms": "86400000"}))
    html = owner.client.get(reverse("dashboard:topic", args=["orders"])).content.decode()
    configs = html[html.index('id="topic-configs"') :]
    assert configs.index('data-config="retention.ms"') < configs.index('data-config="cleanup.policy"')
    assert '<span class="config-value" title="86400000">1 day</span>' in configs
    assert '<span class="config-value" title="1073741824">1 GiB</span>' in configs
