"""Calling a domain action from a form view and turning its typed errors into the page.

Actions (``webapp.accounts.actions``, ``webapp.catalog.actions``) raise
``webapp.accounts.errors`` types. A view runs the action through :func:`call_action`:
field errors land on the form's fields, a duplicate becomes a form-wide error, a role
refusal becomes 403 and a missing object 404, exactly as the REST API answers them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.accounts.facade import Conflict, InvalidInput, NotAllowed, NotFound

Result = TypeVar("Result")


@dataclass(frozen=True)
class Outcome(Generic[Result]):
    """``ok`` is False when the action refused the input (the form then carries why)."""

    ok: bool
    value: Result | None = None


def call_action(form: forms.Form, action: Callable[..., Result], *args: Any, field_map: Mapping[str, str] | None = None, **kwargs: Any) -> Outcome[Result]:
    """Run ``action``; on InvalidInput or Conflict record the errors on ``form`` and return a
    failed outcome. ``field_map`` maps the action's field names to the form's."""
    try:
        return Outcome(True, action(*args, **kwargs))
    except InvalidInput as error:
        add_field_errors(form, error.errors, field_map or {})
    except Conflict as error:
        form.add_error(None, error.message)
    except NotAllowed as error:
        raise PermissionDenied(error.message) from error
    except NotFound as error:
        raise Http404(error.message) from error
    return Outcome(False)


def add_field_errors(form: forms.Form, errors: Mapping[str, Any], field_map: Mapping[str, str]) -> None:
    """Put each action field error on the matching form field (form-wide when none matches).

    Nested errors (``{"configs": {"retention.ms": [...]}}``) are flattened to
    ``"retention.ms: ..."`` on the parent's field.
    """
    for field, messages in errors.items():
        form_field = field_map.get(field, field)
        target = form_field if form_field in form.fields else None
        for message in _flatten(messages):
            if target is None and field not in ("non_field_errors", "detail"):
                message = f"{field}: {message}"
            form.add_error(target, message)


def _flatten(messages: Any) -> list[str]:
    if isinstance(messages, Mapping):
        return [f"{key}: {text}" for key, value in messages.items() for text in _flatten(value)]
    if isinstance(messages, (list, tuple)):
        return [text for value in messages for text in _flatten(value)]
    return [str(messages)]
