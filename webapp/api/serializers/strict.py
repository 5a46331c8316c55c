"""Input serializers that take JSON types as the schema states them.

DRF is lenient the way HTML forms need: a CharField takes ``0`` as ``"0"``, an IntegerField
takes ``"5"``, a BooleanField takes ``"true"`` or ``1``. A JSON API that documents
``"type": "string"`` must refuse a number there (400 naming the field), or its schema lies;
:class:`InputSerializer` checks each given value's JSON type against its field before DRF's
own validation runs. Every serializer that reads a request body derives from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers


def json_type_problem(field: serializers.Field, value: Any) -> str | None:
    """Why ``value`` (decoded JSON) is not of the JSON type ``field`` documents, or None.
    Nulls are left to the field (``allow_null``)."""
    if value is None:
        return None
    if isinstance(field, (serializers.CharField, serializers.ChoiceField)):
        return None if isinstance(value, str) else "Not a string."
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else "Not a boolean."
    if isinstance(field, serializers.IntegerField):
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        return None if integral and not isinstance(value, bool) else "Not an integer."
    if isinstance(field, serializers.ListField):
        if not isinstance(value, list):
            return "Not a list."
        return next((f"Item {index}: {problem}" for index, item in enumerate(value) if (problem := json_type_problem(field.child, item))), None)
    if isinstance(field, serializers.DictField):
        if not isinstance(value, Mapping):
            return "Not an object."
        return next((f"{key}: {problem}" for key, item in value.items() if (problem := json_type_problem(field.child, item))), None)
    if isinstance(field, serializers.ListSerializer):
        return None if isinstance(value, list) else "Not a list."
    if isinstance(field, serializers.Serializer):
        return None if isinstance(value, Mapping) else "Not an object."
    return None


class InputSerializer(serializers.Serializer):
    # A request body's serializer: JSON types checked strictly and unknown fields refused (a
    # misspelt field is a 400, not silently a default); the schema says additionalProperties:
    # false (webapp.api.schema). A comment, not a docstring: the schema would show it as the
    # description of every body without a docstring of its own.

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors = {name: [problem] for name, field in self.fields.items() if name in data and (problem := json_type_problem(field, data[name]))}
            errors.update({str(name): ["Unknown field."] for name in data if name not in self.fields})
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)
