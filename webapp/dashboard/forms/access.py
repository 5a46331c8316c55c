"""Forms of service accounts and API keys."""

from __future__ import annotations

from django import forms

from webapp.accounts.facade import ApiKeyKind, Role

# A service account acts with one of these roles on the REST API; never owner.
SERVICE_ACCOUNT_ROLES = [(Role.ADMIN, "Admin"), (Role.DEVELOPER, "Developer"), (Role.VIEWER, "Viewer")]
MYSELF = ""


class ServiceAccountForm(forms.Form):
    name = forms.CharField(max_length=64, widget=forms.TextInput(attrs={"autofocus": True}))
    description = forms.CharField(max_length=256, required=False)
    role = forms.ChoiceField(
        choices=SERVICE_ACCOUNT_ROLES, initial=Role.DEVELOPER, help_text="What its cloud (REST API) keys may do. Data-plane access is decided by ACLs alone."
    )

    ACTION_FIELDS = {"display_name": "name"}


class ApiKeyForm(forms.Form):
    kind = forms.ChoiceField(
        choices=ApiKeyKind.choices, initial=ApiKeyKind.CLUSTER, help_text="Cluster keys connect applications (SDK); cloud keys call the REST API."
    )
    owner = forms.ChoiceField(required=False, help_text="A service account, or yourself.")
    description = forms.CharField(max_length=256, required=False)

    def __init__(self, *args: object, owners: list[tuple[str, str]], **kwargs: object) -> None:
        """``owners``: (public id, label) pairs the caller may create keys for, besides itself."""
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["owner"].choices = [(MYSELF, "Myself"), *owners]  # type: ignore[attr-defined]

    def owner_id(self) -> str | None:
        return self.cleaned_data["owner"] or None
