"""Kafka's topic name rules (log_formats.topic_names), shared by the SDK, brokers and control plane."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from log_formats.log_files import MAX_DIRECTORY_NAME_BYTES, partition_directory_name
from log_formats.topic_names import (
    MAX_PARTITIONS_PER_TOPIC,
    MAX_TOPIC_NAME_LENGTH,
    TENANT_SEPARATOR,
    InvalidTopicNameError,
    is_internal_topic_name,
    max_topic_name_length,
    validate_topic_name,
)

LEGAL_CHARACTERS = string.ascii_letters + string.digits + "._-"


@given(st.text(alphabet=LEGAL_CHARACTERS, min_size=1, max_size=MAX_TOPIC_NAME_LENGTH).filter(lambda name: name not in (".", "..")))
@settings(max_examples=300, deadline=None)
def test_any_name_of_legal_characters_and_length_is_valid(name):
    validate_topic_name(name)


@given(
    st.text(alphabet=LEGAL_CHARACTERS, max_size=20),
    st.characters().filter(lambda character: character not in LEGAL_CHARACTERS),
    st.text(alphabet=LEGAL_CHARACTERS, max_size=20),
)
@settings(max_examples=300, deadline=None)
def test_any_name_with_one_illegal_character_is_refused(prefix, illegal, suffix):
    with pytest.raises(InvalidTopicNameError) as raised:
        validate_topic_name(prefix + illegal + suffix)
    assert "may contain only" in raised.value.reason


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "must not be empty"),
        (".", "'.' and '..' are not allowed"),
        ("..", "'.' and '..' are not allowed"),
        ("a" * (MAX_TOPIC_NAME_LENGTH + 1), "at most 249 characters (this one has 250)"),
        ("has space", "may contain only"),
        ("ümlaut", "may contain only"),
        ("tenant~orders", "may contain only"),
        ("orders/../x", "may contain only"),
        ("trailing-newline\n", "may contain only"),
    ],
)
def test_invalid_name_is_refused_with_the_rule_it_breaks(name, fragment):
    with pytest.raises(InvalidTopicNameError) as raised:
        validate_topic_name(name)
    assert fragment in raised.value.reason
    assert raised.value.name == name
    assert fragment in str(raised.value)


def test_invalid_topic_name_error_is_a_value_error_that_is_not_retriable():
    error = InvalidTopicNameError("a b", "a topic name may contain only ASCII letters")
    assert isinstance(error, ValueError)
    assert error.retriable is False


@pytest.mark.parametrize("name", ["...", "a.", ".a", "-", "_", "a" * MAX_TOPIC_NAME_LENGTH, "__consumer_offsets"])
def test_edge_names_that_kafka_accepts_are_valid(name):
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "internal"),
    [("__consumer_offsets", True), ("__usage", True), ("__", True), ("_single", False), ("orders__x", False), ("orders", False)],
)
def test_internal_names_are_those_with_the_double_underscore_prefix(name, internal):
    assert is_internal_topic_name(name) is internal


@pytest.mark.parametrize("tenant_id", ["tn-k7q2m9x4hz", "t", "tn-" + "x" * 60])
def test_longest_tenant_name_fills_the_widest_partition_directory_exactly(tenant_id):
    limit = max_topic_name_length(tenant_id)
    longest = "a" * limit
    validate_topic_name(longest, tenant_id)
    widest = partition_directory_name(f"{tenant_id}{TENANT_SEPARATOR}{longest}", MAX_PARTITIONS_PER_TOPIC - 1)
    assert len(widest.encode("utf-8")) == MAX_DIRECTORY_NAME_BYTES
    with pytest.raises(InvalidTopicNameError) as raised:
        validate_topic_name(longest + "a", tenant_id)
    assert raised.value.reason == (
        f"a topic name is at most {limit} characters: the tenant prefix and partition number must fit a 255-byte directory name (this one has {limit + 1})"
    )


def test_a_tenant_id_of_today_leaves_236_characters():
    # tn- and ten characters, '~', and '-9999' for the widest partition of 10,000.
    assert max_topic_name_length("tn-k7q2m9x4hz") == 255 - 13 - 1 - 5 == 236


def test_names_without_a_tenant_keep_kafkas_limit():
    assert max_topic_name_length("") == MAX_TOPIC_NAME_LENGTH
    assert len(partition_directory_name("a" * MAX_TOPIC_NAME_LENGTH, MAX_PARTITIONS_PER_TOPIC - 1)) <= MAX_DIRECTORY_NAME_BYTES
