"""The ACL binding form: Kafka's fields, with the tenant's principals to choose from."""

from __future__ import annotations

from django import forms

from webapp.catalog.facade import ACL_TEMPLATES, CLUSTER_RESOURCE_NAME, Operation, PatternType, Permission, ResourceType

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


class AclTemplateForm(forms.Form):
    """The bindings of an application's role in one step (``webapp.catalog`` ACL templates)."""

    template = forms.ChoiceField(choices=list(ACL_TEMPLATES.items()), widget=forms.RadioSelect, initial="consumer")
    principal = forms.ChoiceField(help_text="The service account (or member) the application authenticates as.")
    topic = forms.CharField(max_length=255, help_text="The topic, or the prefix of its name with PREFIXED.")
    pattern_type = forms.ChoiceField(choices=PatternType.choices, initial=PatternType.LITERAL, label="Topic pattern")
    group = forms.CharField(
        max_length=255, required=False, label="Consumer group", help_text="Its group.id: a consumer needs READ on it (required for a consumer)."
    )
    transactional_id = forms.CharField(
        max_length=255,
        required=False,
        label="Transactional id",
        help_text="A transactional producer's transactional.id (or its prefix, with PREFIXED): it needs WRITE on it.",
    )

    def __init__(self, *args: object, principals: list[tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["principal"].choices = principals  # type: ignore[attr-defined]


class AclExplainForm(forms.Form):
    """Can principal P do operation O on resource R (and which binding decides)?"""

    principal = forms.ChoiceField()
    operation = forms.ChoiceField(choices=[choice for choice in Operation.choices if choice[0] != Operation.ALL], initial=Operation.READ)
    resource_type = forms.ChoiceField(choices=ResourceType.choices, initial=ResourceType.TOPIC)
    resource_name = forms.CharField(max_length=255, help_text=f"A topic or group name, or '{CLUSTER_RESOURCE_NAME}'.")
    host = forms.CharField(max_length=64, required=False, help_text="The client's IP address; empty: any address.")

    def __init__(self, *args: object, principals: list[tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["principal"].choices = [*principals, (WILDCARD_PRINCIPAL, "Everyone (User:*)")]  # type: ignore[attr-defined]
