"""Forms of signing in, signing up and accepting an invitation."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm


class SignInForm(AuthenticationForm):
    """Django's authentication form with browser hints (autofocus, autocomplete)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["username"].widget.attrs.update({"autofocus": True, "autocomplete": "username"})
        self.fields["password"].widget.attrs.update({"autocomplete": "current-password"})


class NewUserForm(forms.Form):
    """A new user's credentials; the account rules live in ``webapp.accounts.actions.signup``."""

    username = forms.CharField(max_length=150, widget=forms.TextInput(attrs={"autocomplete": "username"}))
    email = forms.EmailField()
    password = forms.CharField(widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}), strip=False)
    password_again = forms.CharField(label="Password again", widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}), strip=False)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("password") and data.get("password_again") is not None and data["password"] != data["password_again"]:
            self.add_error("password_again", "The two passwords differ.")
        return data


class SignUpForm(NewUserForm):
    organisation = forms.CharField(max_length=100, label="Organisation name", help_text="Your tenant: topics, keys and members belong to it.")

    field_order = ["organisation", "username", "email", "password", "password_again"]
    ACTION_FIELDS = {"tenant_name": "organisation"}
