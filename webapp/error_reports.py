"""What an error report may show: Django's sensitive-value filtering, widened to Weir's secrets.

Django's :class:`~django.views.debug.SafeExceptionReporterFilter` hides settings whose names look
secret and the request's POST data and headers, but shows every frame's local variables as
they are. In Weir those locals include SDK client configurations (``{"weir.internal.token":
...}``, ``{"sasl.password": ...}``), gRPC metadata pairs and small dataclasses holding
credentials; one debug page once handed a tenant the token that opens every tenant
(issue 12). :class:`WeirExceptionReporterFilter` (``DEFAULT_EXCEPTION_REPORTER_FILTER``, used by
the debug page, the admin mail and every other reporter) therefore

* hides settings by a wider name pattern (tokens, keys, secrets, passwords, credentials, and
  URLs that may carry a password),
* hides, in every frame's locals, any variable, dict entry, ``(name, value)`` pair or
  dataclass field whose name looks secret, however deeply nested (Kafka-style dotted keys
  included: ``weir.internal.token``, ``ssl.key.password``), and
* as a last net, removes from each shown value's text every secret value it knows (the
  secret settings' values and the values it hid in that frame), so that an object whose
  ``repr`` happens to contain one shows the substitute instead.

Variables marked with ``sensitive_variables`` stay hidden as Django hides them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from pprint import pformat
from typing import Any

from django.conf import settings
from django.views.debug import SafeExceptionReporterFilter

# Names of settings, variables, dict keys and fields whose values are never shown. Matched
# anywhere in the name, case-insensitively: "WEIR_INTERNAL_TOKEN", "sasl.password", "api_key".
SECRET_NAME = re.compile(r"API|AUTH|COOKIE|CREDENTIAL|KEY|PASS|SECRET|SIGNATURE|TOKEN|REDIS_URL|BROKER_URL|DATABASE_URL|DSN", flags=re.IGNORECASE)
# Secret values shorter than this are not searched for in text (a one-letter "secret" would
# blank out half a page and protects nothing).
SHORTEST_SCRUBBED_VALUE = 6
# How deep nested containers are cleansed; deeper values are shown as the substitute.
MAXIMUM_DEPTH = 8
# A setting's value taken for a secret to remove from text: long, without spaces, with a digit
# or a character beyond those of names (generated keys and tokens always have one)...
SETTING_SECRET_VALUE = re.compile(r"(?=\S*(?:\d|[^\w.]))\S{12,}")
# ...and not a URL without credentials (a server's address under a secret-looking name) or a
# dotted Python path (PASSWORD_HASHERS' classes).
NOT_A_SECRET = re.compile(r"[a-z][a-z0-9+]*://[^@\s]*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# Characters of one variable's text kept (Django trims what it shows to 4096 anyway). Scrubbing
# looks this far plus SCRUB_MARGIN, so that a secret crossing the cut is removed whole.
SHOWN_TEXT_LIMIT = 8192
SCRUB_MARGIN = 1024


class _Shown:
    """A value already cleansed and turned into text: the reporters print its ``repr``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class WeirExceptionReporterFilter(SafeExceptionReporterFilter):
    """See the module docstring."""

    hidden_settings = SECRET_NAME

    def is_active(self, request: Any) -> bool:
        """Always: Django's filter stands aside when DEBUG is on, but a developer's debug page
        can be seen by whoever reaches that process, and must not hand out credentials either."""
        return True

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> list[tuple[str, Any]]:
        """Django's variables of the frame (``sensitive_variables`` honoured), each further
        cleansed by name and content, and shown as text with every known secret removed."""
        variables = super().get_traceback_frame_variables(request, tb_frame)
        found: set[str] = set()
        cleansed = [(name, self._cleanse(name, value, found, 0)) for name, value in variables]
        known = self._known_secrets() | found
        return [(name, _Shown(self._shown_text(value, known))) for name, value in cleansed]

    def _shown_text(self, value: Any, known: set[str]) -> str:
        """The value's text with known secrets removed, at most SHOWN_TEXT_LIMIT characters (a
        megabyte payload is neither scrubbed nor shown whole)."""
        text = self._text(value)
        if len(text) <= SHOWN_TEXT_LIMIT:
            return self._scrub(text, known)
        kept = self._scrub(text[: SHOWN_TEXT_LIMIT + SCRUB_MARGIN], known)[:SHOWN_TEXT_LIMIT]
        return f"{kept}... <{len(text) - SHOWN_TEXT_LIMIT} more characters not shown>"

    def _cleanse(self, name: object, value: Any, found: set[str], depth: int) -> Any:
        """``value`` with every secret-looking entry replaced; hidden strings go into ``found``."""
        if value is self.cleansed_substitute:
            return value
        if isinstance(name, str) and SECRET_NAME.search(name):
            self._remember(value, found)
            return self.cleansed_substitute
        if depth >= MAXIMUM_DEPTH:
            return value if isinstance(value, (str, int, float, bool, type(None))) else self.cleansed_substitute
        if isinstance(value, Mapping):
            return {key: self._cleanse(key, item, found, depth + 1) for key, item in value.items()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {field.name: self._cleanse(field.name, getattr(value, field.name, None), found, depth + 1) for field in dataclasses.fields(value)}
            return _Shown(f"{type(value).__name__}({', '.join(f'{key}={item!r}' for key, item in fields.items())})")
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return value  # a named tuple cannot be rebuilt from a sequence; its text is scrubbed
        if isinstance(value, (list, tuple, set, frozenset)):
            return type(value)(self._cleanse_item(item, found, depth + 1) for item in value)
        return value

    def _cleanse_item(self, item: Any, found: set[str], depth: int) -> Any:
        """An element of a sequence: a ``(name, value)`` pair (gRPC metadata, header lists) is
        judged by its name."""
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and SECRET_NAME.search(item[0]):
            self._remember(item[1], found)
            return (item[0], self.cleansed_substitute)
        return self._cleanse(None, item, found, depth)

    def _remember(self, value: Any, found: set[str]) -> None:
        for text in _strings(value):
            if len(text) >= SHORTEST_SCRUBBED_VALUE:
                found.add(text)

    def _known_secrets(self) -> set[str]:
        """The values of the secret-looking settings (WEIR_INTERNAL_TOKEN, SECRET_KEY, a password
        in DATABASES, ...), leaving out names and paths that merely sit under such a setting
        (``AXES_PASSWORD_FORM_FIELD = "password"``, ``AUTH_USER_MODEL = "auth.User"``), which
        would otherwise be blanked out of every report."""
        found: set[str] = set()
        for name in dir(settings):
            if name.isupper():
                self._cleanse(name, getattr(settings, name, None), found, 0)
        return {value for value in found if SETTING_SECRET_VALUE.fullmatch(value) and not NOT_A_SECRET.fullmatch(value)}

    @staticmethod
    def _text(value: Any) -> str:
        try:
            return pformat(value)
        except Exception as error:  # a broken __repr__ must not break the report
            return f"Error in formatting: {type(error).__name__}"

    def _scrub(self, text: str, known: Iterable[str]) -> str:
        # Longest first, so that a secret containing another is removed whole.
        for secret in sorted(known, key=len, reverse=True):
            text = text.replace(secret, self.cleansed_substitute).replace(repr(secret)[1:-1], self.cleansed_substitute)
        return text


def _strings(value: Any, depth: int = 0) -> Iterable[str]:
    """Every string inside ``value`` (strings, bytes, and containers of them)."""
    if depth > MAXIMUM_DEPTH:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item, depth + 1)
