"""Forms of the Schemas page: register a version, choose a compatibility level, pick two versions to diff."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from webapp.schemas.facade import LEVELS, available_types

MAX_SUBJECT_LENGTH = 255


class RegisterSchemaForm(forms.Form):
    subject = forms.CharField(max_length=MAX_SUBJECT_LENGTH, help_text="For example orders-value (the topic's name and -value or -key).")
    schema_type = forms.ChoiceField(label="Type", choices=())
    schema = forms.CharField(widget=forms.Textarea(attrs={"rows": 14, "class": "mono", "spellcheck": "false"}), strip=False)
    references = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "placeholder": '[{"name": "common.avsc", "subject": "common", "version": 1}]'}),
        help_text="Optional: a JSON list of {name, subject, version}.",
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["schema_type"].choices = [(name, name) for name in available_types()]  # type: ignore[attr-defined]

    def clean_references(self) -> list[Any]:
        text = self.cleaned_data["references"].strip()
        if not text:
            return []
        try:
            references = json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(f"Not valid JSON: {error}") from None
        if not isinstance(references, list):
            raise forms.ValidationError("Give a JSON list of references.")
        return references

    def body(self) -> dict[str, Any]:
        """The body of Confluent's POST /subjects/{subject}/versions."""
        data = self.cleaned_data
        return {"schema": data["schema"].replace("\r\n", "\n"), "schemaType": data["schema_type"], "references": data["references"]}


class CompatibilityForm(forms.Form):
    level = forms.ChoiceField(choices=[(level, level) for level in LEVELS], label="Compatibility level")


class DiffForm(forms.Form):
    """Two versions of the subject (``versions``: those it has)."""

    old = forms.TypedChoiceField(coerce=int, choices=(), label="From version")
    new = forms.TypedChoiceField(coerce=int, choices=(), label="To version")

    def __init__(self, *args: object, versions: list[int], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for name in ("old", "new"):
            self.fields[name].choices = [(version, str(version)) for version in versions]  # type: ignore[attr-defined]
