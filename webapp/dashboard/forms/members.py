"""Forms of the members page: invite by e-mail, change a member's role."""

from __future__ import annotations

from django import forms

from webapp.accounts.facade import Role


class InviteForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.DEVELOPER, help_text="Only owners may invite owners.")


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
