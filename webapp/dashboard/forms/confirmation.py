"""Confirming an irreversible action: by typing the name of what it destroys (topics, groups),
or by a second, explicit step after reading what stops working (ACLs, API keys, members)."""

from __future__ import annotations

from django import forms


class TypedConfirmationForm(forms.Form):
    """The user types ``expected`` (a topic's name, a group's id) to confirm; ``what`` names it in the label and the error."""

    confirmation = forms.CharField(widget=forms.TextInput(attrs={"autocomplete": "off"}))

    def __init__(self, *args: object, expected: str, what: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.expected = expected
        self.what = what
        self.fields["confirmation"].label = f"Type the {what} to confirm"

    def clean_confirmation(self) -> str:
        typed = self.cleaned_data["confirmation"]
        if typed != self.expected:
            raise forms.ValidationError(f"That is not the {self.what}.")
        return typed


class ExplicitConfirmationForm(forms.Form):
    """The confirmation page's hidden field: the id of the object shown there. A POST without it
    (a single click on a list, a forged form) only shows the confirmation page."""

    confirm = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args: object, expected: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.expected = expected
        self.fields["confirm"].initial = expected

    def clean_confirm(self) -> str:
        value = self.cleaned_data["confirm"]
        if value != self.expected:
            raise forms.ValidationError("This confirmation is for another object.")
        return value
