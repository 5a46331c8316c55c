"""How the message browser shows a record's bytes: as text, as pretty JSON, as hex, or (auto)
as whichever of those the content is: JSON when it parses as a JSON object or array, text
when it is UTF-8, hex otherwise. A payload in Confluent's wire format (magic byte 0 and a schema
id of the tenant's registry) is shown decoded by its schema (``render_decoded``), labelled with the
schema's id, subject and version; an id the registry does not know is labelled so, over the hex.

Pure functions over bytes; the browser renders their output inside ``<pre>`` with Django's
autoescaping, so nothing here needs to escape HTML. Very large payloads are cut at
``DISPLAY_LIMIT_BYTES`` so that one huge record cannot make the page unusable; the rendering
says when it did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from webapp.schemas.facade import Decoded, UnknownSchema

# Bytes of one key, value or header shown at most; the rest is summarised as a count.
DISPLAY_LIMIT_BYTES = 64 * 1024
# Bytes per line of a hex dump, as in `hexdump -C`.
HEX_BYTES_PER_LINE = 16
# A rendering longer than this (characters or lines) is shown collapsed, its first line as summary.
COLLAPSE_CHARACTERS = 600
COLLAPSE_LINES = 12


class Format(StrEnum):
    AUTO = "auto"
    TEXT = "text"
    JSON = "json"
    HEX = "hex"


FORMAT_CHOICES = [(Format.AUTO.value, "By content"), (Format.TEXT.value, "Text"), (Format.JSON.value, "JSON (pretty)"), (Format.HEX.value, "Hex")]


@dataclass(frozen=True)
class SchemaLabel:
    """The schema a payload names: ``subject`` and ``version`` empty for an id the registry does not know."""

    schema_id: int
    subject: str = ""
    version: int = 0

    @property
    def known(self) -> bool:
        return bool(self.subject)


@dataclass(frozen=True)
class RenderedBytes:
    """What a template shows for one payload.

    ``text`` is None for a null payload (Kafka distinguishes null from empty); ``note`` says
    why the requested format was not used or that the payload was truncated.
    """

    text: str | None
    size: int
    note: str = ""
    schema: SchemaLabel | None = None

    @property
    def is_null(self) -> bool:
        return self.text is None

    @property
    def is_long(self) -> bool:
        """Shown collapsed: more than ``COLLAPSE_CHARACTERS`` or ``COLLAPSE_LINES``."""
        return self.text is not None and (len(self.text) > COLLAPSE_CHARACTERS or self.text.count("\n") >= COLLAPSE_LINES)

    @property
    def summary(self) -> str:
        """The first line of a collapsed rendering, cut to 80 characters."""
        first = (self.text or "").split("\n", 1)[0]
        return first[:80] + ("…" if len(first) > 80 else "")


def detect_format(payload: bytes) -> Format:
    """What ``payload`` looks like: JSON (an object or array that parses), UTF-8 text, or binary (hex)."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return Format.HEX
    if text.lstrip()[:1] in ("{", "[") and len(payload) <= DISPLAY_LIMIT_BYTES:
        try:
            json.loads(text)
        except ValueError:
            return Format.TEXT
        return Format.JSON
    return Format.TEXT


def render_bytes(payload: bytes | None, requested: Format) -> RenderedBytes:
    """Render ``payload`` in the requested format, falling back to text (with a note) for
    JSON that does not parse and to hex for text that is not UTF-8."""
    if payload is None:
        return RenderedBytes(None, 0)
    if requested is Format.AUTO:
        requested = detect_format(payload)
        if requested is Format.HEX:
            return RenderedBytes(hex_dump(payload[:DISPLAY_LIMIT_BYTES]), len(payload), _truncation(payload))
    shown = payload[:DISPLAY_LIMIT_BYTES]
    truncation = _truncation(payload)
    if requested is Format.HEX:
        return RenderedBytes(hex_dump(shown), len(payload), truncation)
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        # A cut in the middle of a multi-byte character is not binary data.
        text = None if not truncation else shown.decode("utf-8", errors="ignore")
        if text is None:
            return RenderedBytes(hex_dump(shown), len(payload), _join("not UTF-8 text, shown as hex", truncation))
    if requested is Format.JSON and not truncation:
        try:
            return RenderedBytes(json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=False), len(payload))
        except ValueError:
            return RenderedBytes(text, len(payload), "not valid JSON, shown as text")
    if requested is Format.JSON:
        return RenderedBytes(text, len(payload), _join("too large to parse as JSON, shown as text", truncation))
    return RenderedBytes(text, len(payload), truncation)


def render_decoded(payload: bytes, decoded: Decoded | UnknownSchema | None, requested: Format) -> RenderedBytes:
    """``payload`` as its schema decoded it (auto and JSON formats), or as ``render_bytes`` does
    when it is not in the wire format or text or hex was asked for."""
    if decoded is None or requested not in (Format.AUTO, Format.JSON):
        return render_bytes(payload, requested)
    if isinstance(decoded, UnknownSchema):
        shown = hex_dump(payload[:DISPLAY_LIMIT_BYTES])
        return RenderedBytes(shown, len(payload), _truncation(payload), SchemaLabel(decoded.schema_id))
    label = SchemaLabel(decoded.schema_id, decoded.subject, decoded.version)
    if decoded.error:
        return RenderedBytes(hex_dump(payload[:DISPLAY_LIMIT_BYTES]), len(payload), _join(decoded.error, _truncation(payload)), label)
    return RenderedBytes(decoded.text, len(payload), "", label)


def hex_dump(payload: bytes) -> str:
    """``hexdump -C`` style: offset, 16 bytes in hex, and their printable ASCII."""
    lines = []
    for start in range(0, len(payload), HEX_BYTES_PER_LINE):
        chunk = payload[start : start + HEX_BYTES_PER_LINE]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk)
        ascii_part = "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)
        lines.append(f"{start:08x}  {hex_part:<{HEX_BYTES_PER_LINE * 3 - 1}}  |{ascii_part}|")
    return "\n".join(lines)


def _truncation(payload: bytes) -> str:
    shown = min(len(payload), DISPLAY_LIMIT_BYTES)
    return f"showing the first {shown} of {len(payload)} bytes" if shown < len(payload) else ""


def _join(*notes: str) -> str:
    return "; ".join(note for note in notes if note)
