"""The ACL binding form: Kafka's fields, with the tenant's principals to choose from."""

from __future__ import annotations

from django import forms

from webapp.catalog.facade import CLUSTER_RESOURCE_NAME, Operation, PatternType, Permission, ResourceType

WILDCARD_PRINCIPAL = "User:*"


class AclCreateForm(forms.Form):
    principal = forms.ChoiceField(help_text="Who the binding applies to.")
    permission = forms.ChoiceField(choices=Permission.choices, initial=Permission.ALLOW)
    operation = forms.ChoiceField(choices=Operation.choices, initial=Operation.READ)
    resource_type = forms.ChoiceField(choices=ResourceType.choices, initial=ResourceType.TOPIC)
    pattern_type = forms.ChoiceField(
        choices=PatternType.choices, initial=PatternType.LITERAL, help_text="LITERAL: exactly the name ('*' for all); PREFIXED: every name starting with it."
    )
    resource_name = forms.CharField(max_length=255, help_text=f"A topic or group name, or '{CLUSTER_RESOURCE_NAME}' for CLUSTER.")
    host = forms.CharField(max_length=64, initial="*", help_text="'*' or one IP address.")

    def __init__(self, *args: object, principals: list[tuple[str, str]], **kwargs: object) -> None:
        """``principals``: (principal, label) pairs of the tenant's service accounts and members."""
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["principal"].choices = [*principals, (WILDCARD_PRINCIPAL, "Everyone (User:*)")]  # type: ignore[attr-defined]
