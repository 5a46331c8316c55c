"""Query strings read through an input serializer: a request without any of its parameters gets
the serializer's validation of no parameters (defaults included, never shared between requests),
and a request with parameters is validated as given (400 naming a bad one)."""

from __future__ import annotations

import pytest
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from webapp.api.query import validated_query_data


class _Filter(serializers.Serializer):
    state = serializers.ChoiceField(choices=["A", "B"], required=False)
    kinds = serializers.ListField(child=serializers.CharField(), default=list)


class _Required(serializers.Serializer):
    since = serializers.IntegerField()


def request(query: str = "") -> Request:
    return Request(APIRequestFactory().get("/api/v1/things" + query))


def test_no_parameters_gives_the_defaults_and_each_request_its_own_copy() -> None:
    first = validated_query_data(_Filter, request())
    first["kinds"].append("changed")

    assert validated_query_data(_Filter, request()) == {"kinds": []}
    # A parameter the serializer does not declare is not one of its parameters.
    assert validated_query_data(_Filter, request("?page_size=2")) == {"kinds": []}


def test_parameters_are_validated_as_given() -> None:
    assert validated_query_data(_Filter, request("?state=A&kinds=x&kinds=y")) == {"state": "A", "kinds": ["x", "y"]}
    with pytest.raises(exceptions.ValidationError) as refused:
        validated_query_data(_Filter, request("?state=C"))
    assert "state" in refused.value.detail


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_serializer_that_needs_a_parameter_refuses_its_absence_every_time(attempt: int) -> None:
    with pytest.raises(exceptions.ValidationError) as refused:
        validated_query_data(_Required, request())
    assert "since" in refused.value.detail
